//! Cutting a file into chunks: windows of lines that overlap a little, so a match
//! near a window's edge still has context. (Symbol-aware chunking by tree-sitter will
//! replace this for source languages; windows stay the fallback for everything else.)

/// Lines per chunk.
pub const WINDOW: usize = 60;
/// Lines shared by neighbouring chunks.
pub const OVERLAP: usize = 10;

/// One chunk: lines `start_line..=end_line` (1-based) of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start_line: u64,
    pub end_line: u64,
    pub text: String,
}

/// Chunks covering every line of `text`; none for empty text.
pub fn line_windows(text: &str) -> Vec<Chunk> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < lines.len() {
        let end = (start + WINDOW).min(lines.len());
        out.push(Chunk {
            start_line: start as u64 + 1,
            end_line: end as u64,
            text: lines[start..end].concat(),
        });
        if end == lines.len() {
            break;
        }
        start = end - OVERLAP;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_line_and_overlap() {
        let text: String = (1..=130).map(|i| format!("line {i}\n")).collect();
        let chunks = line_windows(&text);
        assert_eq!(chunks.len(), 3);
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 60));
        assert_eq!((chunks[1].start_line, chunks[1].end_line), (51, 110));
        assert_eq!((chunks[2].start_line, chunks[2].end_line), (101, 130));
        assert!(chunks[2].text.ends_with("line 130\n"));
        assert!(line_windows("").is_empty());
        assert_eq!(line_windows("no newline").len(), 1);
    }
}
