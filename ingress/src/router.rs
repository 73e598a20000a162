//! Routing by hand: the path is matched with matchit to a [`RouteId`], then the method picks
//! the route. Each route declares who may call it and how large its body may be.

use http::Method;

use crate::auth::Permission;
use crate::body;

/// Every route of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteId {
    Health,
    Ready,
    Metrics,
    ListInvocations,
    GetInvocation,
    FetchModule,
}

/// Who may call a route, and whether it is counted and traced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Health and metrics: no token, not rate limited, not traced.
    Operational,
    /// No token; counted against the client address (vendor webhooks).
    Public,
    /// A bearer token holding this permission.
    Token(Permission),
    /// The runner's bearer (`APP_RUNNER_TOKEN`), internal listener only.
    RunnerToken,
}

/// One route: method, path pattern (matchit syntax), access and body limit.
#[derive(Debug, Clone)]
pub struct RouteSpec {
    pub id: RouteId,
    pub method: Method,
    pub pattern: &'static str,
    pub access: Access,
    pub body_limit: usize,
}

const fn route(id: RouteId, method: Method, pattern: &'static str, access: Access) -> RouteSpec {
    RouteSpec {
        id,
        method,
        pattern,
        access,
        body_limit: body::JSON_LIMIT,
    }
}

/// Routes of the public listener (`API_PORT`).
pub fn public_routes() -> Vec<RouteSpec> {
    vec![
        route(RouteId::Health, Method::GET, "/health", Access::Operational),
        route(
            RouteId::Ready,
            Method::GET,
            "/health/ready",
            Access::Operational,
        ),
        route(
            RouteId::Metrics,
            Method::GET,
            "/metrics",
            Access::Operational,
        ),
        route(
            RouteId::ListInvocations,
            Method::GET,
            "/app-invocations",
            Access::Token(Permission::AppsRead),
        ),
        route(
            RouteId::GetInvocation,
            Method::GET,
            "/app-invocations/{id}",
            Access::Token(Permission::AppsRead),
        ),
    ]
}

/// Routes of the internal listener (`API_INTERNAL_PORT`), which no public route reaches.
pub fn internal_routes() -> Vec<RouteSpec> {
    vec![
        route(RouteId::Health, Method::GET, "/health", Access::Operational),
        route(
            RouteId::Ready,
            Method::GET,
            "/health/ready",
            Access::Operational,
        ),
        route(
            RouteId::FetchModule,
            Method::GET,
            "/internal/app-modules/{sha256}",
            Access::RunnerToken,
        ),
    ]
}

/// Path parameters of a matched route.
#[derive(Debug, Default)]
pub struct Params(Vec<(&'static str, String)>);

impl Params {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The result of routing a request.
#[derive(Debug)]
pub enum Lookup<'a> {
    Found(&'a RouteSpec, Params),
    MethodNotAllowed {
        allow: String,
        pattern: &'static str,
    },
    NotFound,
}

/// A listener's routing table.
#[derive(Debug)]
pub struct Router {
    paths: matchit::Router<Vec<RouteSpec>>,
    /// Parameter names per pattern, so params can be stored with static names.
    names: Vec<(&'static str, Vec<&'static str>)>,
}

impl Router {
    /// Builds the table. Panics on a conflicting pattern: the tables are constants, so that is a
    /// programming error caught by the first test that builds them.
    pub fn new(routes: Vec<RouteSpec>) -> Self {
        let mut grouped: Vec<(&'static str, Vec<RouteSpec>)> = Vec::new();
        for spec in routes {
            match grouped.iter_mut().find(|(p, _)| *p == spec.pattern) {
                Some((_, specs)) => specs.push(spec),
                None => grouped.push((spec.pattern, vec![spec])),
            }
        }
        let mut paths = matchit::Router::new();
        let mut names = Vec::new();
        for (pattern, specs) in grouped {
            names.push((pattern, param_names(pattern)));
            #[allow(clippy::expect_used)]
            paths
                .insert(pattern, specs)
                .expect("route patterns do not conflict");
        }
        Self { paths, names }
    }

    pub fn lookup(&self, method: &Method, path: &str) -> Lookup<'_> {
        let Ok(matched) = self.paths.at(path) else {
            return Lookup::NotFound;
        };
        let specs = matched.value;
        // HEAD is GET without the body (hyper leaves the body out of a HEAD answer).
        let answers = |s: &&RouteSpec| {
            s.method == *method || (*method == Method::HEAD && s.method == Method::GET)
        };
        let Some(spec) = specs.iter().find(answers) else {
            let allow = specs
                .iter()
                .flat_map(|s| {
                    let head = (s.method == Method::GET).then_some("HEAD");
                    std::iter::once(s.method.as_str()).chain(head)
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Lookup::MethodNotAllowed {
                allow,
                pattern: specs[0].pattern,
            };
        };
        let mut params = Params::default();
        if let Some((_, names)) = self.names.iter().find(|(p, _)| *p == spec.pattern) {
            for name in names {
                if let Some(value) = matched.params.get(name) {
                    params.0.push((name, value.to_owned()));
                }
            }
        }
        Lookup::Found(spec, params)
    }
}

fn param_names(pattern: &'static str) -> Vec<&'static str> {
    pattern
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_routes_params_and_wrong_methods() {
        let router = Router::new(public_routes());
        match router.lookup(&Method::GET, "/app-invocations/abc") {
            Lookup::Found(spec, params) => {
                assert_eq!(spec.id, RouteId::GetInvocation);
                assert_eq!(params.get("id"), Some("abc"));
            }
            other => panic!("{other:?}"),
        }
        match router.lookup(&Method::HEAD, "/app-invocations/abc") {
            Lookup::Found(spec, _) => assert_eq!(spec.id, RouteId::GetInvocation),
            other => panic!("HEAD answers as GET: {other:?}"),
        }
        match router.lookup(&Method::POST, "/app-invocations") {
            Lookup::MethodNotAllowed { allow, .. } => assert_eq!(allow, "GET, HEAD"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            router.lookup(&Method::GET, "/nope"),
            Lookup::NotFound
        ));
        assert!(matches!(
            router.lookup(&Method::GET, "/app-invocations/a/b"),
            Lookup::NotFound
        ));
    }

    #[test]
    fn internal_routes_are_not_public_and_back() {
        let public = Router::new(public_routes());
        let internal = Router::new(internal_routes());
        assert!(matches!(
            public.lookup(&Method::GET, "/internal/app-modules/ab"),
            Lookup::NotFound
        ));
        assert!(matches!(
            internal.lookup(&Method::GET, "/app-invocations"),
            Lookup::NotFound
        ));
    }
}
