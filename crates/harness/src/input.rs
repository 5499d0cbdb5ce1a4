//! Reading input files as text: every reader of a user's file (scenario, corpus, trace,
//! summary) goes through [`read_text`], so a file that is not UTF-8 is an error naming the line
//! where the first invalid byte is, not a bare "stream did not contain valid UTF-8".

use std::path::Path;

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be read (missing, a directory, no permission).
    Io(std::io::Error),
    /// The bytes are not UTF-8: the 1-based line and column (in bytes) of the first invalid one.
    NotUtf8 {
        /// 1-based line.
        line: usize,
        /// 1-based byte column.
        column: usize,
    },
}

impl ReadError {
    /// The line, for an encoding error.
    pub fn line(&self) -> Option<usize> {
        match self {
            ReadError::Io(_) => None,
            ReadError::NotUtf8 { line, .. } => Some(*line),
        }
    }

    /// The message, without the file or line.
    pub fn message(&self) -> String {
        match self {
            ReadError::Io(e) => format!("cannot read: {e}"),
            ReadError::NotUtf8 { column, .. } => {
                format!("not UTF-8 text: invalid byte at column {column}")
            }
        }
    }
}

/// Where the first invalid UTF-8 byte of `bytes` is, or the text.
pub fn decode(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let before = &bytes[..valid];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        ReadError::NotUtf8 {
            line,
            column: valid - line_start + 1,
        }
    })
}

/// Read a file as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    decode(std::fs::read(path).map_err(ReadError::Io)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_names_its_line_and_column() {
        match decode(b"a = 1\nbc\xffd\n".to_vec()) {
            Err(ReadError::NotUtf8 { line, column }) => assert_eq!((line, column), (2, 3)),
            other => panic!("{other:?}"),
        }
        match decode(b"\xc3".to_vec()) {
            Err(ReadError::NotUtf8 { line, column }) => assert_eq!((line, column), (1, 1)),
            other => panic!("{other:?}"),
        }
        assert_eq!(decode(b"ok\n".to_vec()).unwrap(), "ok\n");
    }
}
