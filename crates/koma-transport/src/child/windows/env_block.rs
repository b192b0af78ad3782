//! The environment of a Windows child. Windows compares variable names
//! without regard to case, so a given `Path` replaces the parent's `PATH`
//! (never a second entry beside it), and of two given names that differ only
//! in case the last wins. The block is sorted by name, as Windows keeps its
//! own.

use std::ffi::{OsStr, OsString};

/// A name as Windows compares it: case folded to upper case.
pub(crate) fn fold(name: &OsStr) -> String {
    name.to_string_lossy().to_uppercase()
}

/// The child's variables: the parent's (`inherited`), with `given` added or
/// replacing, compared without case; the last of a name given twice wins,
/// under the spelling it was given with. Sorted by the folded name.
pub(crate) fn merge(inherited: Vec<(OsString, OsString)>, given: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    let given_names: Vec<String> = given.iter().map(|(k, _)| fold(k)).collect();
    let mut vars: Vec<(OsString, OsString)> =
        inherited.into_iter().filter(|(k, _)| !given_names.contains(&fold(k))).collect();
    for (i, (k, v)) in given.iter().enumerate() {
        if !given_names[i + 1..].contains(&given_names[i]) {
            vars.push((k.clone(), v.clone()));
        }
    }
    vars.sort_by_cached_key(|(k, _)| fold(k));
    vars
}

/// The value of `name` among `vars`, compared without case.
pub(crate) fn lookup<'a>(vars: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    let name = name.to_uppercase();
    vars.iter().find(|(k, _)| fold(k) == name).map(|(_, v)| v.as_os_str())
}

/// The block `CreateProcessW` takes (`CREATE_UNICODE_ENVIRONMENT`): each
/// `name=value` in UTF-16 with a NUL after it, and one more NUL at the end
/// (two when there is no variable at all).
#[cfg(windows)]
pub(crate) fn block(vars: &[(OsString, OsString)]) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    let mut block = Vec::new();
    for (k, v) in vars {
        block.extend(k.encode_wide());
        block.push(u16::from(b'='));
        block.extend(v.encode_wide());
        block.push(0);
    }
    if vars.is_empty() {
        block.push(0);
    }
    block.push(0);
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect()
    }

    #[test]
    fn a_given_name_replaces_the_parents_whatever_its_case() {
        let parent = pairs(&[("PATH", "C:\\Windows"), ("TEMP", "C:\\t"), ("Zed", "1")]);
        let merged = merge(parent, &pairs(&[("Path", "C:\\koma")]));
        assert_eq!(merged, pairs(&[("Path", "C:\\koma"), ("TEMP", "C:\\t"), ("Zed", "1")]));
        assert_eq!(lookup(&merged, "PATH"), Some(OsStr::new("C:\\koma")));
        assert_eq!(lookup(&merged, "path"), Some(OsStr::new("C:\\koma")));
    }

    #[test]
    fn of_names_given_twice_the_last_wins_and_the_block_is_sorted() {
        let merged = merge(pairs(&[("b", "1")]), &pairs(&[("KOMA_X", "first"), ("a", "2"), ("koma_x", "last")]));
        assert_eq!(merged, pairs(&[("a", "2"), ("b", "1"), ("koma_x", "last")]));
        assert_eq!(lookup(&merged, "PATHEXT"), None);
    }
}
