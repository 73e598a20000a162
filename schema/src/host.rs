//! Host names, one syntax for the whole platform: a manifest's `hosts` entries are checked with
//! it at upload, and the runner's vendor HTTP client accepts only URL hosts it allows, so an
//! entry and a URL can only ever match when both are plain DNS names of the same form.

use std::net::Ipv4Addr;

/// One `hosts` entry: `localhost`, an IPv4 dotted quad, a host name, or `*.` and a host name.
/// Host names are written in lower case (so "each once" means what it says) with at least two
/// labels; IDN names in their `xn--` form.
pub fn check_entry(host: &str) -> Result<(), String> {
    if host == "localhost" {
        return Ok(());
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        // std's parser accepts exactly the dotted quad: no octal, no short forms.
        let ip: Ipv4Addr = host.parse().map_err(|_| {
            format!("{host} is not an IPv4 address (four numbers 0 to 255, no leading zeros)")
        })?;
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(format!("{host} does not name one host"));
        }
        return Ok(());
    }
    if host.contains([':', '/', '@']) {
        return Err(format!(
            "{host:?} is not a host: write the host alone, without scheme, port or path \
             (IPv6 addresses are not allowed)"
        ));
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    check_name(name).map_err(|why| format!("{host:?} is not a host: {why}"))
}

pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.len() > 253 {
        return Err("a host name has at most 253 characters");
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("write host names in lower case");
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Err("a host name has at least two labels, such as vendor.com");
    }
    for label in &labels {
        let valid = (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !valid {
            return Err(
                "labels are 1 to 63 letters, digits or '-', neither starting nor ending with '-'",
            );
        }
    }
    if labels
        .last()
        .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("the last label of a host name is not a number");
    }
    Ok(())
}

/// Whether `name` is a host name of [`check_name`]'s form.
pub fn is_name(name: &str) -> bool {
    check_name(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_shapes() {
        for good in [
            "localhost",
            "10.0.0.7",
            "api.vendor.com",
            "*.vendor.com",
            "xn--bcher-kva.example",
            "a-b.c1.example",
        ] {
            assert_eq!(check_entry(good), Ok(()), "{good}");
        }
        for bad in [
            "vendor",
            "*.com",
            "*.*.vendor.com",
            "-a.vendor.com",
            "a..vendor.com",
            "vendor.com.",
            "01.2.3.4",
            "1.2.3",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "1.2.3.4.example.123",
            "bücher.example",
            "api_v1.vendor.com",
        ] {
            assert!(check_entry(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_are_lower_case_labels_without_underscores() {
        assert!(is_name("api.vendor.com"));
        assert!(is_name("xn--bcher-kva.example"));
        assert!(!is_name("api_v1.vendor.com"));
        assert!(!is_name("Api.vendor.com"));
        assert!(!is_name("vendor"));
        assert!(!is_name("a..b.example"));
    }
}
