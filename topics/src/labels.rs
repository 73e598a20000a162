//! The statuses, kinds, priorities and decisions of the wire contract are labels
//! ([`service::labels!`]): enums that travel and are stored as their names.

pub use service::labels;
pub use service::labels::Unknown;

#[cfg(test)]
mod tests {
    use crate::callbacks::SessionStatus;

    #[test]
    fn a_label_reads_back_as_itself_and_nothing_else() {
        for status in SessionStatus::ALL {
            assert_eq!(SessionStatus::parse(status.as_str()), Some(*status));
            let json = serde_json::to_value(status).expect("serialises");
            assert_eq!(json, serde_json::json!(status.as_str()));
            assert_eq!(SessionStatus::try_from(status.to_string()), Ok(*status));
        }
        assert_eq!(SessionStatus::TimedOut.as_str(), "timed_out");
        let unknown = SessionStatus::try_from("lost".to_owned()).expect_err("no such status");
        assert_eq!(unknown.to_string(), "\"lost\" is no SessionStatus");
        assert!(serde_json::from_str::<SessionStatus>("\"TimedOut\"").is_err());
    }
}
