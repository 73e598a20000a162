//! Routing by hand: each listener declares its routes as an enum ([`Route`]); the path is
//! matched with matchit, then the method picks the variant. A listener's table holds only its
//! own routes, so no arm anywhere turns another listener's route into a 404.

use http::Method;

/// The routes of one listener: implemented by an enum with one variant per route.
pub trait Route: Copy + Eq + std::fmt::Debug + 'static {
    /// Every route of the listener.
    fn all() -> Vec<Self>;

    fn method(self) -> Method;

    /// The path pattern in matchit syntax (`/app-invocations/{id}`); also the `http.route` of
    /// metrics and spans.
    fn pattern(self) -> &'static str;
}

/// The outcome of routing a request.
#[derive(Debug)]
pub enum Routed<'r, 'p, R> {
    Found(R, matchit::Params<'r, 'p>),
    /// The path exists with other methods.
    MethodNotAllowed {
        pattern: &'static str,
        allow: String,
    },
    NotFound,
}

impl<R: Route> Routed<'_, '_, R> {
    /// The `http.route` label: the pattern matched, or `unmatched`.
    pub fn label(&self) -> &'static str {
        match self {
            Routed::Found(route, _) => route.pattern(),
            Routed::MethodNotAllowed { pattern, .. } => pattern,
            Routed::NotFound => "unmatched",
        }
    }
}

/// A listener's routing table.
#[derive(Debug)]
pub struct Router<R> {
    paths: matchit::Router<Vec<R>>,
}

impl<R: Route> Router<R> {
    /// Builds the table of every route of `R`. Panics on a conflicting pattern: the routes are
    /// constants, so that is a programming error the first test building the table catches.
    pub fn new() -> Self {
        let mut grouped: Vec<Vec<R>> = Vec::new();
        for route in R::all() {
            match grouped
                .iter_mut()
                .find(|g| g[0].pattern() == route.pattern())
            {
                Some(group) => group.push(route),
                None => grouped.push(vec![route]),
            }
        }
        let mut paths = matchit::Router::new();
        for group in grouped {
            let pattern = group[0].pattern();
            if let Err(conflict) = paths.insert(pattern, group) {
                panic!("route {pattern} conflicts: {conflict}");
            }
        }
        Self { paths }
    }

    /// The route of `method` on `path`. HEAD is answered as GET (hyper leaves the body out).
    pub fn route<'r, 'p>(&'r self, method: &Method, path: &'p str) -> Routed<'r, 'p, R> {
        let Ok(matched) = self.paths.at(path) else {
            return Routed::NotFound;
        };
        let serves = |r: &&R| {
            let m = r.method();
            m == *method || (*method == Method::HEAD && m == Method::GET)
        };
        match matched.value.iter().find(serves) {
            Some(route) => Routed::Found(*route, matched.params),
            None => Routed::MethodNotAllowed {
                pattern: matched.value[0].pattern(),
                allow: allow(matched.value),
            },
        }
    }
}

impl<R: Route> Default for Router<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// The `Allow` header of a path: its methods, with HEAD after GET.
fn allow<R: Route>(routes: &[R]) -> String {
    let mut methods: Vec<String> = Vec::new();
    for route in routes {
        let method = route.method();
        methods.push(method.as_str().to_owned());
        if method == Method::GET {
            methods.push("HEAD".to_owned());
        }
    }
    methods.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Demo {
        List,
        Get,
        Delete,
    }

    impl Route for Demo {
        fn all() -> Vec<Self> {
            vec![Demo::List, Demo::Get, Demo::Delete]
        }
        fn method(self) -> Method {
            match self {
                Demo::List | Demo::Get => Method::GET,
                Demo::Delete => Method::DELETE,
            }
        }
        fn pattern(self) -> &'static str {
            match self {
                Demo::List => "/things",
                Demo::Get | Demo::Delete => "/things/{id}",
            }
        }
    }

    #[test]
    fn finds_routes_params_and_wrong_methods() {
        let router = Router::<Demo>::new();
        match router.route(&Method::GET, "/things/abc") {
            Routed::Found(Demo::Get, params) => assert_eq!(params.get("id"), Some("abc")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            router.route(&Method::DELETE, "/things/abc"),
            Routed::Found(Demo::Delete, _)
        ));
        assert!(matches!(
            router.route(&Method::HEAD, "/things"),
            Routed::Found(Demo::List, _)
        ));
        match router.route(&Method::POST, "/things/x") {
            Routed::MethodNotAllowed { allow, pattern } => {
                assert_eq!(allow, "GET, HEAD, DELETE");
                assert_eq!(pattern, "/things/{id}");
            }
            other => panic!("{other:?}"),
        }
        let unmatched = router.route(&Method::GET, "/things/a/b");
        assert!(matches!(unmatched, Routed::NotFound));
        assert_eq!(unmatched.label(), "unmatched");
    }
}
