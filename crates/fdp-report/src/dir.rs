//! Report folders: `report.md`, figures and `results.json`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Result, io_err};

/// A report folder: `report.md`, figures and `results.json`.
#[derive(Debug, Clone)]
pub struct ReportDir {
    path: PathBuf,
}

impl ReportDir {
    /// Creates (or reuses) the folder.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        std::fs::create_dir_all(&path).map_err(|e| io_err(&path, e))?;
        Ok(Self { path })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of a file in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes a text file (e.g. `report.md`).
    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.file(name);
        std::fs::write(&path, text).map_err(|e| io_err(&path, e))?;
        Ok(path)
    }

    /// Writes a serialisable value as pretty JSON (e.g. `results.json`).
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<PathBuf> {
        let text = serde_json::to_string_pretty(value).map_err(|e| io_err(&self.file(name), e))?;
        self.write_text(name, &text)
    }
}
