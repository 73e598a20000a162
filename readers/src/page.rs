use serde::Serialize;

/// Lists whose count stops here answer `totalIsEstimate: true` (SPEC §1, §8).
pub const COUNT_CAP: i64 = 100_000;

/// `limit` and `offset` of a list request, already validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

/// The common list envelope (SPEC §1).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub total: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_is_estimate: Option<bool>,
}

impl<T> ListPage<T> {
    /// Builds the envelope from a count taken over at most `COUNT_CAP + 1` rows.
    pub fn capped(items: Vec<T>, counted: i64) -> Self {
        let capped = counted > COUNT_CAP;
        Self {
            items,
            total: counted.min(COUNT_CAP),
            total_is_estimate: Some(capped),
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> ListPage<U> {
        ListPage {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            total_is_estimate: self.total_is_estimate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_over_the_cap_is_an_estimate_at_the_cap() {
        let page = ListPage::<()>::capped(vec![], COUNT_CAP + 1);
        assert_eq!(page.total, COUNT_CAP);
        assert_eq!(page.total_is_estimate, Some(true));
        let page = ListPage::<()>::capped(vec![], COUNT_CAP);
        assert_eq!(page.total, COUNT_CAP);
        assert_eq!(page.total_is_estimate, Some(false));
    }
}
