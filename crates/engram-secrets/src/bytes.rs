//! Byte and char-boundary helpers shared by the redactor and the checks it calls, so
//! that the checks never import the redactor (imports point one way: `redact` uses
//! the checks, the checks use this). Pure functions; none of them panics.

/// Where `needle` first occurs in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The nearest char boundary of `s` at or before `i` (clamped to its length).
pub fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The nearest char boundary of `s` at or after `i` (clamped to its length).
pub fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_step_off_the_middle_of_a_char() {
        let s = "aé";
        assert_eq!(floor_boundary(s, 2), 1);
        assert_eq!(ceil_boundary(s, 2), 3);
        assert_eq!(floor_boundary(s, 99), 3);
        assert_eq!(find(b"xxabc", b"abc"), Some(2));
        assert_eq!(find(b"xx", b"abc"), None);
    }
}
