//! `var_get`/`var_set`: the module's key-value scratch space. Every call runs in a fresh
//! instance, so variables live for one call only; their total size is bounded like Extism's
//! default (`max_var_bytes`, 1 MiB).

use std::collections::HashMap;

pub(crate) const MAX_VAR_BYTES: usize = 1024 * 1024;

#[derive(Debug, Default)]
pub(crate) struct Vars {
    values: HashMap<String, Vec<u8>>,
    bytes: usize,
}

/// `var_set` would exceed [`MAX_VAR_BYTES`].
#[derive(Debug, thiserror::Error)]
#[error("variable store is full ({MAX_VAR_BYTES} bytes)")]
pub(crate) struct VarsFull;

impl Vars {
    pub(crate) fn get(&self, key: &str) -> Option<&[u8]> {
        self.values.get(key).map(Vec::as_slice)
    }

    /// Sets `key`; an empty value removes it (Extism: a null value handle deletes).
    pub(crate) fn set(&mut self, key: &str, value: &[u8]) -> Result<(), VarsFull> {
        let old = self.values.get(key).map_or(0, |v| key.len() + v.len());
        if value.is_empty() {
            self.values.remove(key);
            self.bytes -= old;
            return Ok(());
        }
        let new_total = self.bytes - old + key.len() + value.len();
        if new_total > MAX_VAR_BYTES {
            return Err(VarsFull);
        }
        self.values.insert(key.to_owned(), value.to_vec());
        self.bytes = new_total;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_replace_remove_and_bound() {
        let mut vars = Vars::default();
        vars.set("a", b"1").expect("fits");
        vars.set("a", b"22").expect("fits");
        assert_eq!(vars.get("a"), Some(&b"22"[..]));
        vars.set("a", b"").expect("removes");
        assert_eq!(vars.get("a"), None);
        assert!(vars.set("big", &vec![0; MAX_VAR_BYTES]).is_err());
        vars.set("big", &vec![0; MAX_VAR_BYTES - 3])
            .expect("fits exactly");
    }
}
