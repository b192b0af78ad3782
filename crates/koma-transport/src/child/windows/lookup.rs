//! Where a Windows child's program is looked for. A name is searched for in
//! each folder of the child's `PATH` (never the current folder first, as
//! `cmd.exe` does), with each extension of `PATHEXT` (`.COM;.EXE;.BAT;.CMD`
//! when it is not set). What is taken: a `.exe` or `.com` (a program), or a
//! `.cmd` or `.bat` (a batch file, which `plan.rs` handles without a shell);
//! another extension of `PATHEXT` (`.JS`, `.VBS`, ...) needs an interpreter
//! and is passed over. A path (a name with `\`, `/` or a drive) is taken as
//! it is, or with `PATHEXT`'s extensions when it has none.
//!
//! Paths are strings in Windows' form, and the file system is reached
//! through [`Files`], so that these rules are tested on every system.

/// What the search needs of the file system.
pub(crate) trait Files {
    fn is_file(&self, path: &str) -> bool;
    fn is_dir(&self, path: &str) -> bool;
    /// At most `limit` bytes of the file, or `None` if it cannot be read.
    fn read(&self, path: &str, limit: usize) -> Option<Vec<u8>>;
}

/// What a search found.
#[allow(clippy::enum_variant_names)] // `NotFound` is what it says
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// A program: `.exe`, `.com`, or a path given with another extension.
    Program(String),
    /// A `.cmd` or `.bat`.
    Batch(String),
    /// A folder, where a path was given.
    Directory(String),
    NotFound,
}

const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// Whether `name` is a path rather than a name to look for on `PATH`.
pub(crate) fn is_path(name: &str) -> bool {
    name.contains(['\\', '/']) || name.as_bytes().get(1) == Some(&b':')
}

/// Whether `path` is absolute (`C:\...`, `\\server\...`).
pub(crate) fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with("\\\\")
        || path.starts_with("//")
        || (b.len() >= 3 && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
}

/// `dir\name`.
pub(crate) fn join(dir: &str, name: &str) -> String {
    format!("{}\\{}", dir.trim_end_matches(['\\', '/']), name)
}

/// The folder of `path` (without its last separator).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind(['\\', '/']).map_or(".", |i| &path[..i])
}

/// The extension of the last part of `path`, lower case, with its dot.
pub(crate) fn extension(path: &str) -> Option<String> {
    let last = &path[path.rfind(['\\', '/']).map_or(0, |i| i + 1)..];
    last.rfind('.').filter(|&i| i > 0).map(|i| last[i..].to_ascii_lowercase())
}

/// The extensions of `PATHEXT`, lower case.
pub(crate) fn extensions(pathext: Option<&str>) -> Vec<String> {
    pathext
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(DEFAULT_PATHEXT)
        .split(';')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect()
}

fn kind(path: String) -> Option<Found> {
    match extension(&path).as_deref() {
        Some(".exe" | ".com") => Some(Found::Program(path)),
        Some(".cmd" | ".bat") => Some(Found::Batch(path)),
        _ => None,
    }
}

/// Look for `name` in one folder: the name itself when it has an extension,
/// then the name with each of `exts`.
fn in_folder(dir: &str, name: &str, exts: &[String], files: &impl Files) -> Option<Found> {
    if extension(name).is_some() {
        let path = join(dir, name);
        if files.is_file(&path) {
            if let Some(found) = kind(path) {
                return Some(found);
            }
        }
    }
    exts.iter().map(|e| join(dir, &format!("{name}{e}"))).filter(|p| files.is_file(p)).find_map(kind)
}

/// Find `name` for a child whose working folder is `base` (absolute), with
/// its `PATH` and `PATHEXT`.
pub(crate) fn find(name: &str, base: &str, path: Option<&str>, pathext: Option<&str>, files: &impl Files) -> Found {
    let exts = extensions(pathext);
    if is_path(name) {
        let full = if is_absolute(name) { name.to_owned() } else { join(base, name) };
        if files.is_dir(&full) {
            return Found::Directory(full);
        }
        if files.is_file(&full) {
            // Given whole: a program whatever its extension (Windows says if it is not one).
            return kind(full.clone()).unwrap_or(Found::Program(full));
        }
        if extension(name).is_none() {
            let parent = parent(&full).to_owned();
            let last = &full[parent.len() + 1..];
            if let Some(found) = in_folder(&parent, last, &exts, files) {
                return found;
            }
        }
        return Found::NotFound;
    }
    for dir in path.unwrap_or("").split(';').map(|d| d.trim().trim_matches('"')).filter(|d| !d.is_empty()) {
        let dir = if is_absolute(dir) { dir.to_owned() } else { join(base, dir) };
        if let Some(found) = in_folder(&dir, name, &exts, files) {
            return found;
        }
    }
    Found::NotFound
}

#[cfg(test)]
pub(crate) mod fake {
    use std::collections::HashMap;

    /// A file system of a few files (folders are implied by the files' paths).
    #[derive(Default)]
    pub struct FakeFiles(pub HashMap<String, Vec<u8>>);

    /// A path as Windows compares it: either separator, doubled ones as one, no case.
    fn key(path: &str) -> String {
        path.replace('/', "\\").replace("\\\\", "\\").to_ascii_lowercase()
    }

    impl FakeFiles {
        pub fn with(mut self, path: &str, text: &str) -> Self {
            self.0.insert(key(path), text.as_bytes().to_vec());
            self
        }
    }

    impl super::Files for FakeFiles {
        fn is_file(&self, path: &str) -> bool {
            self.0.contains_key(&key(path))
        }
        fn is_dir(&self, path: &str) -> bool {
            let dir = format!("{}\\", key(path).trim_end_matches('\\'));
            self.0.keys().any(|k| k.starts_with(&dir))
        }
        fn read(&self, path: &str, limit: usize) -> Option<Vec<u8>> {
            let data = self.0.get(&key(path))?;
            Some(data[..data.len().min(limit)].to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeFiles;
    use super::*;

    fn files() -> FakeFiles {
        FakeFiles::default()
            .with("C:\\a\\koma.cmd", "")
            .with("C:\\b\\koma.exe", "")
            .with("C:\\b\\koma.js", "")
            .with("C:\\c\\tool.com", "")
            .with("C:\\w\\bin\\koma.exe", "")
            .with("C:\\w\\x\\run.bat", "")
    }

    #[test]
    fn a_name_is_searched_on_path_with_pathext_in_order() {
        let f = files();
        let path = Some("C:\\a;C:\\b;C:\\c");
        assert_eq!(find("koma", "C:\\w", path, None, &f), Found::Batch("C:\\a\\koma.cmd".into()));
        assert_eq!(find("koma", "C:\\w", Some("C:\\b;C:\\a"), None, &f), Found::Program("C:\\b\\koma.exe".into()));
        assert_eq!(find("tool", "C:\\w", path, None, &f), Found::Program("C:\\c\\tool.com".into()));
        // Only PATHEXT's extensions; and .JS is passed over even when PATHEXT lists it.
        assert_eq!(
            find("koma", "C:\\w", Some("C:\\b"), Some(".JS;.EXE"), &f),
            Found::Program("C:\\b\\koma.exe".into())
        );
        assert_eq!(find("koma", "C:\\w", Some("C:\\b"), Some(".JS"), &f), Found::NotFound);
        assert_eq!(find("koma.exe", "C:\\w", path, None, &f), Found::Program("C:\\b\\koma.exe".into()));
        assert_eq!(find("nothing", "C:\\w", path, None, &f), Found::NotFound);
    }

    #[test]
    fn the_current_folder_is_not_searched_first() {
        // C:\w\bin\koma.exe is in the working folder's bin, not on PATH.
        assert_eq!(find("koma", "C:\\w\\bin", Some("C:\\c"), None, &files()), Found::NotFound);
        // A relative PATH entry is relative to the child's folder.
        assert_eq!(find("koma", "C:\\w", Some("bin"), None, &files()), Found::Program("C:\\w\\bin\\koma.exe".into()));
    }

    #[test]
    fn a_path_is_taken_as_given_or_with_pathext() {
        let f = files();
        assert_eq!(find("bin\\koma", "C:\\w", None, None, &f), Found::Program("C:\\w\\bin\\koma.exe".into()));
        assert_eq!(find("C:/w/x/run.bat", "C:\\", None, None, &f), Found::Batch("C:/w/x/run.bat".into()));
        assert_eq!(find("x\\run", "C:\\w", None, None, &f), Found::Batch("C:\\w\\x\\run.bat".into()));
        assert_eq!(find("C:\\b\\koma.js", "C:\\", None, None, &f), Found::Program("C:\\b\\koma.js".into()));
        assert_eq!(find("C:\\w\\bin", "C:\\", None, None, &f), Found::Directory("C:\\w\\bin".into()));
        assert_eq!(find("C:\\none\\koma", "C:\\", None, None, &f), Found::NotFound);
    }

    #[test]
    fn path_helpers() {
        assert!(is_path("a\\b") && is_path("a/b") && is_path("C:koma") && !is_path("koma.exe"));
        assert!(is_absolute("C:\\x") && is_absolute("\\\\srv\\x") && !is_absolute("x\\y") && !is_absolute("C:x"));
        assert_eq!(extension("C:\\a.b\\koma"), None);
        assert_eq!(extension("C:\\a\\Koma.CMD"), Some(".cmd".into()));
        assert_eq!(extension(".hidden"), None);
        assert_eq!(parent("C:\\a\\b.cmd"), "C:\\a");
        assert_eq!(extensions(Some(".com; .EXE;;bad")), [".com", ".exe"]);
    }
}
