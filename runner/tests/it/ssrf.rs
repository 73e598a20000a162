//! SSRF table for the vendor HTTP client, run against real TCP listeners on loopback that count
//! the connections they accept. A refused request must fail *and* leave every listener at zero:
//! refusing after connecting would already have reached the target.
//!
//! Names resolve through a fake DNS (`FakeDns`) under the real public-address filter: there is no
//! internet here, and it makes "an approved name that points at loopback" reproducible. The fake
//! also records every name it is asked, so the table shows which refusals happen before DNS.

use std::error::Error as StdError;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use runner::{
    ApprovedHosts, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, OutboundClient, OutboundError,
    OutboundRequest, OutboundResponse,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const CASE_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Counting listeners

/// What a listener answers for a request path.
#[derive(Debug, Clone)]
enum Reply {
    /// 200 with this body and two `X-Vendor` headers.
    Ok(&'static str),
    /// 302 to this location.
    Redirect(String),
    /// 200 with a body of this many bytes and its `Content-Length`.
    Sized(usize),
    /// 200 with a chunked body of this many bytes and no `Content-Length`.
    Chunked(usize),
    /// Accepts and reads the request, then never answers.
    Silent,
    /// Sends the head of a 200 promising a body, then never sends it.
    HeadOnly,
}

type Route = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// A loopback listener counting accepted connections; stops serving when dropped.
struct Counting {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Counting {
    async fn bind(addr: &str) -> Option<TcpListener> {
        TcpListener::bind(addr).await.ok()
    }

    fn serve(listener: TcpListener, route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        let addr = listener.local_addr().expect("bound address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let route: Route = Arc::new(route);
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            // Connections live in the set, so dropping the listener ends them too.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                connections.spawn(answer(stream, route.clone()));
            }
        });
        Self {
            addr,
            accepted,
            task,
        }
    }

    async fn start(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = Self::bind("127.0.0.1:0").await.expect("bind loopback");
        Self::serve(listener, route)
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(mut stream: TcpStream, route: Route) {
    let Some(path) = read_request_path(&mut stream).await else {
        return;
    };
    let reply = route(&path);
    let _ = match reply {
        Reply::Ok(body) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Vendor: a\r\nX-Vendor: b\r\nConnection: close\r\n\r\n",
                body.len()
            );
            write(&mut stream, head.as_bytes(), body.as_bytes()).await
        }
        Reply::Redirect(location) => {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            write(&mut stream, head.as_bytes(), b"").await
        }
        Reply::Sized(length) => {
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n");
            write(&mut stream, head.as_bytes(), &vec![b'x'; length]).await
        }
        Reply::Chunked(length) => write_chunked(&mut stream, length).await,
        Reply::Silent => hold(stream).await,
        Reply::HeadOnly => {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes()).await;
            hold(stream).await
        }
    };
}

/// Reads the request head and returns its path.
async fn read_request_path(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0_u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buf).await.ok()?;
        if read == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..read]);
    }
    let line = String::from_utf8_lossy(&head).lines().next()?.to_owned();
    line.split(' ').nth(1).map(str::to_owned)
}

async fn write(stream: &mut TcpStream, head: &[u8], body: &[u8]) -> std::io::Result<()> {
    stream.write_all(head).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

async fn write_chunked(stream: &mut TcpStream, length: usize) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    let chunk = vec![b'x'; 64 * 1024];
    let mut left = length;
    while left > 0 {
        let size = left.min(chunk.len());
        stream.write_all(format!("{size:x}\r\n").as_bytes()).await?;
        stream.write_all(&chunk[..size]).await?;
        stream.write_all(b"\r\n").await?;
        left -= size;
    }
    stream.write_all(b"0\r\n\r\n").await?;
    stream.shutdown().await
}

async fn hold(stream: TcpStream) -> std::io::Result<()> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    drop(stream);
    Ok(())
}

/// The listeners of one table case, fresh per case so counts never mix.
struct Rig {
    /// Answers 200 "ok" to everything.
    ok: Counting,
    /// Redirects according to the path; see `rig`.
    redirect: Counting,
    /// The target of redirects that must not be followed; answers 200 "other".
    other: Counting,
    /// Answers 200 on [::1], when this machine has IPv6 loopback.
    v6: Option<Counting>,
}

impl Rig {
    async fn start() -> Self {
        let ok = Counting::start(|_| Reply::Ok("ok")).await;
        let other = Counting::start(|_| Reply::Ok("other")).await;
        let other_port = other.port();
        let listener = Counting::bind("127.0.0.1:0").await.expect("bind loopback");
        let own_port = listener.local_addr().expect("address").port();
        let redirect = Counting::serve(listener, move |path| match path {
            "/away" => Reply::Redirect(format!("http://localhost:{other_port}/")),
            "/other-port" => Reply::Redirect(format!("http://127.0.0.1:{other_port}/")),
            "/https" => Reply::Redirect(format!("https://127.0.0.1:{own_port}/final")),
            "/metadata" => Reply::Redirect("http://169.254.169.254/latest/meta-data/".to_owned()),
            "/hop" => Reply::Redirect("/final".to_owned()),
            "/loop" => Reply::Redirect("/loop".to_owned()),
            _ => Reply::Ok("final"),
        });
        let v6 = Counting::bind("[::1]:0")
            .await
            .map(|listener| Counting::serve(listener, |_| Reply::Ok("v6")));
        Self {
            ok,
            redirect,
            other,
            v6,
        }
    }

    /// The URL with `{ok}`, `{redirect}`, `{other}` and `{v6}` replaced by listener ports. Without
    /// IPv6 loopback `{v6}` is the `ok` port: still a port that counts.
    fn url(&self, template: &str) -> String {
        let v6 = self.v6.as_ref().unwrap_or(&self.ok).port();
        template
            .replace("{ok}", &self.ok.port().to_string())
            .replace("{redirect}", &self.redirect.port().to_string())
            .replace("{other}", &self.other.port().to_string())
            .replace("{v6}", &v6.to_string())
    }

    fn counts(&self) -> [(&'static str, usize); 4] {
        [
            ("ok", self.ok.connections()),
            ("redirect", self.redirect.connections()),
            ("other", self.other.connections()),
            ("v6", self.v6.as_ref().map_or(0, Counting::connections)),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// Fake DNS under the real filter

/// Answers a few names the way a hostile or careless DNS zone could, and records what it was
/// asked.
#[derive(Clone, Default)]
struct FakeDns {
    asked: Arc<Mutex<Vec<String>>>,
}

impl FakeDns {
    fn answers(name: &str) -> Option<Vec<IpAddr>> {
        let ips: &[&str] = match name {
            // A vendor name whose zone points at the runner itself.
            "loopback.example.com" | "svc.example.com" => &["127.0.0.1"],
            // Every private shape at once, IPv4-mapped and NAT64 forms of loopback included.
            "mixed.example.com" => &[
                "10.0.0.1",
                "192.168.0.10",
                "169.254.169.254",
                "127.0.0.1",
                "::1",
                "::ffff:127.0.0.1",
                "64:ff9b::7f00:1",
                "fe80::1",
            ],
            _ => return None,
        };
        Some(
            ips.iter()
                .map(|ip| ip.parse().expect("fake answer"))
                .collect(),
        )
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }
}

impl Resolve for FakeDns {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        self.asked.lock().expect("lock").push(host.clone());
        let answer: Result<Addrs, Box<dyn StdError + Send + Sync>> = match Self::answers(&host) {
            Some(ips) => Ok(Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)))),
            None => Err(format!("no such name {host}").into()),
        };
        Box::pin(std::future::ready(answer))
    }
}

// ---------------------------------------------------------------------------------------------
// The table

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Fails with this code; no listener is connected to and DNS is not asked.
    Refused(&'static str),
    /// Fails with this code after asking DNS for the URL's name; no connection.
    RefusedAfterDns(&'static str),
    /// Fails with this code after the redirect listener answered once; nothing else connected.
    RefusedAfterRedirect(&'static str),
    /// Succeeds with this body, after this many connections to the named listener.
    Answered {
        body: &'static str,
        listener: &'static str,
        connections: usize,
    },
}

struct Case {
    name: &'static str,
    approved: &'static [&'static str],
    url: &'static str,
    expect: Expect,
}

const fn case(
    name: &'static str,
    approved: &'static [&'static str],
    url: &'static str,
    expect: Expect,
) -> Case {
    Case {
        name,
        approved,
        url,
        expect,
    }
}

const NOT_ALLOWED: Expect = Expect::Refused("not_allowed");
const LOOPBACK_DEV: &[&str] = &["127.0.0.1", "localhost"];

#[rustfmt::skip]
const CASES: &[Case] = &[
    // Loopback and development entries.
    case("127.0.0.1 not approved", &[], "http://127.0.0.1:{ok}/", NOT_ALLOWED),
    case("127.0.0.1 with only a vendor name approved", &["api.example.com"], "http://127.0.0.1:{ok}/", NOT_ALLOWED),
    case("127.0.0.1 with only localhost approved", &["localhost"], "http://127.0.0.1:{ok}/", NOT_ALLOWED),
    case("another loopback address than the approved one", &["127.0.0.1"], "http://127.0.0.2:{ok}/", NOT_ALLOWED),
    case("localhost not approved", &["api.example.com"], "http://localhost:{ok}/", NOT_ALLOWED),
    case("localhost with only 127.0.0.1 approved", &["127.0.0.1"], "http://localhost:{ok}/", NOT_ALLOWED),
    case("localhost is not covered by *.localhost", &["*.localhost"], "http://localhost:{ok}/", NOT_ALLOWED),
    case("localhost. with a trailing dot", &["localhost"], "http://localhost.:{ok}/", NOT_ALLOWED),
    case("approved name before an @", &["api.example.com"], "http://api.example.com@127.0.0.1:{ok}/", NOT_ALLOWED),
    case("credentials even to an approved address", &["127.0.0.1"], "http://user:pw@127.0.0.1:{ok}/", NOT_ALLOWED),
    // Alternate IPv4 spellings the URL parser turns into 127.0.0.1.
    case("decimal 2130706433", &["api.example.com"], "http://2130706433:{ok}/", NOT_ALLOWED),
    case("hex 0x7f.0.0.1", &["api.example.com"], "http://0x7f.0.0.1:{ok}/", NOT_ALLOWED),
    case("hex 0x7f.1", &["localhost"], "http://0x7f.1:{ok}/", NOT_ALLOWED),
    case("octal 0177.0.0.1", &["api.example.com"], "http://0177.0.0.1:{ok}/", NOT_ALLOWED),
    case("octal 017700000001", &["localhost"], "http://017700000001:{ok}/", NOT_ALLOWED),
    case("short 127.1", &["api.example.com"], "http://127.1:{ok}/", NOT_ALLOWED),
    // IPv6 literals, never allowed.
    case("[::1]", LOOPBACK_DEV, "http://[::1]:{v6}/", NOT_ALLOWED),
    case("[::]", LOOPBACK_DEV, "http://[::]:{v6}/", NOT_ALLOWED),
    case("IPv4-mapped [::ffff:127.0.0.1]", LOOPBACK_DEV, "http://[::ffff:127.0.0.1]:{ok}/", NOT_ALLOWED),
    case("IPv4-mapped hex [::ffff:7f00:1]", LOOPBACK_DEV, "http://[::ffff:7f00:1]:{ok}/", NOT_ALLOWED),
    case("IPv4-compatible [::127.0.0.1]", LOOPBACK_DEV, "http://[::127.0.0.1]:{ok}/", NOT_ALLOWED),
    case("NAT64 [64:ff9b::7f00:1]", LOOPBACK_DEV, "http://[64:ff9b::7f00:1]:{ok}/", NOT_ALLOWED),
    case("6to4 [2002:7f00:1::]", LOOPBACK_DEV, "http://[2002:7f00:1::]:{ok}/", NOT_ALLOWED),
    case("link-local [fe80::1]", LOOPBACK_DEV, "http://[fe80::1]:{v6}/", NOT_ALLOWED),
    // Unspecified and private IPv4.
    case("0.0.0.0 not approved", &["127.0.0.1"], "http://0.0.0.0:{ok}/", NOT_ALLOWED),
    case("0.0.0.0 even when listed", &["0.0.0.0"], "http://0.0.0.0:{ok}/", NOT_ALLOWED),
    case("0 as 0.0.0.0", &["0.0.0.0"], "http://0:{ok}/", NOT_ALLOWED),
    case("metadata 169.254.169.254", &["api.example.com"], "http://169.254.169.254/latest/meta-data/", NOT_ALLOWED),
    case("private 10.0.0.1", &["api.example.com"], "http://10.0.0.1/", NOT_ALLOWED),
    case("CGNAT 100.64.0.1", &["api.example.com"], "http://100.64.0.1/", NOT_ALLOWED),
    case("private 192.168.1.1", &["api.example.com"], "http://192.168.1.1/", NOT_ALLOWED),
    case("private 172.16.0.1", &["api.example.com"], "http://172.16.0.1/", NOT_ALLOWED),
    // Names and schemes.
    case("wildcard does not match its parent", &["*.example.com"], "http://example.com:{ok}/", NOT_ALLOWED),
    case("wildcard does not match a longer label", &["*.example.com"], "http://evilexample.com:{ok}/", NOT_ALLOWED),
    case("wildcard with a trailing dot", &["*.example.com"], "http://svc.example.com.:{ok}/", NOT_ALLOWED),
    case("ftp scheme", &["127.0.0.1"], "ftp://127.0.0.1:{ok}/", NOT_ALLOWED),
    case("file scheme", LOOPBACK_DEV, "file:///etc/passwd", NOT_ALLOWED),
    case("port 0", &["127.0.0.1"], "http://127.0.0.1:0/", Expect::Refused("invalid_request")),
    case("not a URL", LOOPBACK_DEV, "http://[::1/", Expect::Refused("invalid_request")),
    // Approved names whose DNS answers are not public: the filter leaves nothing to connect to.
    case("approved name resolving to loopback", &["loopback.example.com"], "http://loopback.example.com:{ok}/", Expect::RefusedAfterDns("not_allowed")),
    case("wildcard name resolving to loopback", &["*.example.com"], "http://svc.example.com:{ok}/", Expect::RefusedAfterDns("not_allowed")),
    case("approved name resolving to private and mapped forms only", &["mixed.example.com"], "http://mixed.example.com:{ok}/", Expect::RefusedAfterDns("not_allowed")),
    // Redirects from an approved development target.
    case("redirect to localhost on another port", LOOPBACK_DEV, "http://127.0.0.1:{redirect}/away", Expect::RefusedAfterRedirect("not_allowed")),
    case("redirect to the same host on another port", LOOPBACK_DEV, "http://127.0.0.1:{redirect}/other-port", Expect::RefusedAfterRedirect("not_allowed")),
    case("redirect to another scheme", LOOPBACK_DEV, "http://127.0.0.1:{redirect}/https", Expect::RefusedAfterRedirect("not_allowed")),
    case("redirect to metadata", LOOPBACK_DEV, "http://127.0.0.1:{redirect}/metadata", Expect::RefusedAfterRedirect("not_allowed")),
    // What is allowed.
    case("approved 127.0.0.1", &["127.0.0.1"], "http://127.0.0.1:{ok}/", Expect::Answered { body: "ok", listener: "ok", connections: 1 }),
    case("approved 127.0.0.1 spelled 2130706433", &["127.0.0.1"], "http://2130706433:{ok}/", Expect::Answered { body: "ok", listener: "ok", connections: 1 }),
    case("approved localhost", &["localhost"], "http://localhost:{ok}/", Expect::Answered { body: "ok", listener: "ok", connections: 1 }),
    case("approved localhost in capitals", &["LocalHost"], "http://LOCALHOST:{ok}/path?q=1", Expect::Answered { body: "ok", listener: "ok", connections: 1 }),
    case("redirect to the same host and port", &["127.0.0.1"], "http://127.0.0.1:{redirect}/hop", Expect::Answered { body: "final", listener: "redirect", connections: 2 }),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssrf_table() {
    assert!(CASES.len() >= 30);
    let mut failures = Vec::new();
    for case in CASES {
        if let Err(failure) = run_case(case).await {
            failures.push(format!("{}: {failure}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "failed cases:\n{}",
        failures.join("\n")
    );
}

async fn run_case(case: &Case) -> Result<(), String> {
    let rig = Rig::start().await;
    let dns = FakeDns::default();
    let client = OutboundClient::with_name_lookup(Arc::new(dns.clone())).expect("client");
    let hosts = ApprovedHosts::new(case.approved);
    let url = rig.url(case.url);
    let result = client.send(&hosts, get(&url), CASE_TIMEOUT).await;
    let counts = rig.counts();
    let connected = |name: &str| {
        counts
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, c)| *c)
    };
    let total: usize = counts.iter().map(|(_, c)| c).sum();
    let asked = dns.asked();

    match case.expect {
        Expect::Refused(code)
        | Expect::RefusedAfterDns(code)
        | Expect::RefusedAfterRedirect(code) => {
            let err = match result {
                Ok(response) => return Err(format!("answered {}", response.status)),
                Err(err) => err,
            };
            check(
                err.code() == code,
                format!("code {} ({err}), wanted {code}", err.code()),
            )?;
            let redirects = match case.expect {
                Expect::RefusedAfterRedirect(_) => 1,
                _ => 0,
            };
            check(
                connected("redirect") == redirects,
                format!("connections {counts:?}"),
            )?;
            check(total == redirects, format!("connections {counts:?}"))?;
            let expected_asked = match case.expect {
                Expect::RefusedAfterDns(_) => vec![host_of(&url)],
                _ => Vec::new(),
            };
            check(asked == expected_asked, format!("DNS asked {asked:?}"))
        }
        Expect::Answered {
            body,
            listener,
            connections,
        } => {
            let response = result.map_err(|err| format!("refused: {err}"))?;
            check(
                response.status == 200,
                format!("status {}", response.status),
            )?;
            check(response.body == body, format!("body {:?}", response.body))?;
            check(
                connected(listener) == connections,
                format!("connections {counts:?}"),
            )?;
            check(total == connections, format!("connections {counts:?}"))?;
            check(asked.is_empty(), format!("DNS asked {asked:?}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Limits, timeouts, redirects and secrets

#[tokio::test]
async fn redirects_stop_after_five() {
    let rig = Rig::start().await;
    let (client, hosts) = loopback_client();
    let url = rig.url("http://127.0.0.1:{redirect}/loop");
    let err = client
        .send(&hosts, get(&url), CASE_TIMEOUT)
        .await
        .expect_err("a redirect loop fails");
    assert_eq!(err.code(), "not_allowed", "{err}");
    // The original request and five followed redirects.
    assert_eq!(rig.redirect.connections(), 6);
}

#[tokio::test]
async fn a_body_of_exactly_eight_mebibytes_is_accepted() {
    let listener = Counting::start(|_| Reply::Sized(MAX_RESPONSE_BYTES)).await;
    let response = send_to(&listener, "/").await.expect("at the limit");
    assert_eq!(response.body.len(), MAX_RESPONSE_BYTES);
}

#[tokio::test]
async fn a_declared_body_one_byte_over_is_refused() {
    let listener = Counting::start(|_| Reply::Sized(MAX_RESPONSE_BYTES + 1)).await;
    let err = send_to(&listener, "/").await.expect_err("over the limit");
    assert_eq!(err, OutboundError::TooLarge);
}

#[tokio::test]
async fn a_streamed_body_one_byte_over_is_refused() {
    let listener = Counting::start(|_| Reply::Chunked(MAX_RESPONSE_BYTES + 1)).await;
    let err = send_to(&listener, "/").await.expect_err("over the limit");
    assert_eq!(err, OutboundError::TooLarge);
}

#[tokio::test]
async fn a_streamed_body_of_exactly_eight_mebibytes_is_accepted() {
    let listener = Counting::start(|_| Reply::Chunked(MAX_RESPONSE_BYTES)).await;
    let response = send_to(&listener, "/").await.expect("at the limit");
    assert_eq!(response.body.len(), MAX_RESPONSE_BYTES);
}

#[tokio::test]
async fn a_request_body_over_eight_mebibytes_is_refused_before_connecting() {
    let listener = Counting::start(|_| Reply::Ok("ok")).await;
    let (client, hosts) = loopback_client();
    let mut request = get(&format!("http://127.0.0.1:{}/", listener.port()));
    request.method = "POST".to_owned();
    request.body = Some(Bytes::from(vec![0; MAX_REQUEST_BYTES + 1]));
    let err = client
        .send(&hosts, request, CASE_TIMEOUT)
        .await
        .expect_err("too large");
    assert_eq!(err, OutboundError::TooLarge);
    assert_eq!(listener.connections(), 0);
}

#[tokio::test]
async fn a_silent_vendor_times_out() {
    let listener = Counting::start(|_| Reply::Silent).await;
    let (client, hosts) = loopback_client();
    let url = format!("http://127.0.0.1:{}/", listener.port());
    let err = client
        .send(&hosts, get(&url), Duration::from_millis(300))
        .await
        .expect_err("no answer");
    assert_eq!(err, OutboundError::Timeout);
    assert_eq!(listener.connections(), 1);
}

#[tokio::test]
async fn the_timeout_covers_the_body() {
    let listener = Counting::start(|_| Reply::HeadOnly).await;
    let (client, hosts) = loopback_client();
    let url = format!("http://127.0.0.1:{}/", listener.port());
    let err = client
        .send(&hosts, get(&url), Duration::from_millis(300))
        .await
        .expect_err("body never comes");
    assert_eq!(err, OutboundError::Timeout);
}

#[tokio::test]
async fn status_and_lower_case_headers_come_back() {
    let listener = Counting::start(|_| Reply::Ok("hello")).await;
    let response = send_to(&listener, "/").await.expect("answered");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "hello");
    let vendor: Vec<_> = response
        .headers
        .iter()
        .filter(|(name, _)| name == "x-vendor")
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(vendor, ["a", "b"]);
    assert!(
        response
            .headers
            .iter()
            .all(|(name, _)| *name == name.to_ascii_lowercase())
    );
}

#[tokio::test]
async fn errors_never_carry_header_values_or_queries() {
    let (client, hosts) = loopback_client();
    let closed_port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("address").port()
    };
    for url in [
        format!("http://127.0.0.1:{closed_port}/x?api_key=SECRET"),
        "http://10.0.0.1/x?api_key=SECRET".to_owned(),
        "http://127.0.0.1:99999/x?api_key=SECRET".to_owned(),
    ] {
        let mut request = get(&url);
        request.headers = vec![("authorization".to_owned(), "Bearer SECRET".to_owned())];
        let err = client
            .send(&hosts, request, CASE_TIMEOUT)
            .await
            .expect_err("fails");
        assert!(!err.to_string().contains("SECRET"), "{err}");
    }
    let mut request = get("http://127.0.0.1:9/");
    request.headers = vec![("x-key".to_owned(), "SECRET\r\nx-evil: 1".to_owned())];
    let err = client
        .send(&hosts, request, CASE_TIMEOUT)
        .await
        .expect_err("bad value");
    assert_eq!(err.code(), "invalid_request");
    assert!(!err.to_string().contains("SECRET"), "{err}");
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error() {
    let (client, hosts) = loopback_client();
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("address").port()
    };
    let err = client
        .send(
            &hosts,
            get(&format!("http://127.0.0.1:{port}/")),
            CASE_TIMEOUT,
        )
        .await
        .expect_err("nothing listens");
    assert_eq!(err.code(), "transport", "{err}");
}

#[test]
fn send_is_send() {
    fn assert_send<F: Future + Send>(_: F) {}
    let client = OutboundClient::new().expect("client");
    let hosts = ApprovedHosts::new(["localhost"]);
    assert_send(client.send(&hosts, get("http://localhost/"), CASE_TIMEOUT));
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn get(url: &str) -> OutboundRequest {
    OutboundRequest {
        method: "GET".to_owned(),
        url: url.to_owned(),
        headers: Vec::new(),
        body: None,
    }
}

fn loopback_client() -> (OutboundClient, ApprovedHosts) {
    let client = OutboundClient::with_name_lookup(Arc::new(FakeDns::default())).expect("client");
    (client, ApprovedHosts::new(["127.0.0.1"]))
}

async fn send_to(listener: &Counting, path: &str) -> Result<OutboundResponse, OutboundError> {
    let (client, hosts) = loopback_client();
    let url = format!("http://127.0.0.1:{}{path}", listener.port());
    client.send(&hosts, get(&url), CASE_TIMEOUT).await
}

fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default()
}

fn check(ok: bool, failure: String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(failure) }
}
