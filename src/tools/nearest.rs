//! The text of a file nearest to what a worker gave: the window of lines most alike to it,
//! line by line. `edit_file` shows it when `old` is not found; `write_file` uses it to tell
//! one part of a file, written as if it were the whole, from a new content.

/// The most line pairs compared when looking for the nearest text (file lines times `old`
/// lines); a long `old` in a long file is matched by its first lines.
const COMPARED_PAIRS: usize = 400_000;
/// The most file lines searched.
const SEARCHED_LINES: usize = 20_000;
/// Each line is compared by its first this many characters.
const COMPARED_CHARS: usize = 200;
/// Below this mean similarity a window is not shown as what was meant.
const NEAREST_MIN_SCORE: f64 = 0.4;
/// Each shown line is clipped to this many characters.
const SHOWN_LINE_CHARS: usize = 160;

/// `lines[start..start + len]` as a worker is shown them: how to name them (`line 5`,
/// `lines 7-9`) and each with its number, at most `max` of them, then how many more there are.
pub(super) fn numbered(lines: &[&str], start: usize, len: usize, max: usize) -> (String, String) {
    let last = start + len;
    let span = if len == 1 {
        format!("line {last}")
    } else {
        format!("lines {}-{last}", start + 1)
    };
    let mut shown: String = lines[start..last]
        .iter()
        .enumerate()
        .take(max)
        .map(|(i, line)| {
            format!(
                "{:>5} | {}\n",
                start + i + 1,
                crate::text::clip(line, SHOWN_LINE_CHARS)
            )
        })
        .collect();
    if len > max {
        shown.push_str(&format!("  ... ({} more lines)\n", len - max));
    }
    (span, shown)
}

/// The window of file lines most like `old`.
#[derive(Debug, PartialEq)]
pub(super) struct Nearest {
    /// 0-based index of its first line.
    pub(super) start: usize,
    /// Its length in lines (`old`'s, or what is left of the file).
    pub(super) len: usize,
    /// Mean line similarity, 0 to 1.
    pub(super) score: f64,
    /// 0-based indices of its lines equal to `old`'s line only once whitespace is ignored.
    pub(super) whitespace_only: Vec<usize>,
}

/// The window of `lines` as long as `old` whose lines are most alike to `old`'s, line by
/// line (ties go to the first); `None` when none is alike enough.
pub(super) fn nearest(lines: &[&str], old: &str) -> Option<Nearest> {
    let wanted: Vec<&str> = old.lines().collect();
    if wanted.is_empty() || lines.is_empty() {
        return None;
    }
    let searched = &lines[..lines.len().min(SEARCHED_LINES)];
    let compared = wanted.len().min((COMPARED_PAIRS / searched.len()).max(1));
    let old_grams: Vec<LineGrams> = wanted[..compared]
        .iter()
        .map(|l| LineGrams::of(l))
        .collect();
    let file_grams: Vec<LineGrams> = searched.iter().map(|l| LineGrams::of(l)).collect();
    let windows = searched.len().saturating_sub(compared) + 1;
    let mut best: Option<(usize, f64)> = None;
    for start in 0..windows {
        let total: f64 = old_grams
            .iter()
            .zip(&file_grams[start..])
            .map(|(a, b)| a.similarity(b))
            .sum();
        let score = total / compared as f64;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((start, score));
        }
    }
    let (start, score) = best.filter(|(_, s)| *s >= NEAREST_MIN_SCORE)?;
    let len = wanted.len().min(lines.len() - start);
    let whitespace_only = (start..start + len)
        .filter(|&i| {
            let want = wanted[i - start];
            lines[i] != want && normalized(lines[i]) == normalized(want)
        })
        .collect();
    Some(Nearest {
        start,
        len,
        score,
        whitespace_only,
    })
}

/// Whitespace runs as one space, trimmed.
fn normalized(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line's whitespace-normalized text and its character bigrams, sorted, for comparing.
struct LineGrams {
    text: String,
    grams: Vec<(char, char)>,
}

impl LineGrams {
    fn of(line: &str) -> Self {
        let text: String = normalized(line).chars().take(COMPARED_CHARS).collect();
        let chars: Vec<char> = text.chars().collect();
        let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
        grams.sort_unstable();
        Self { text, grams }
    }

    /// 1 for lines equal but for whitespace, else the Dice coefficient of their bigrams.
    fn similarity(&self, other: &Self) -> f64 {
        if self.text == other.text {
            return 1.0;
        }
        let total = self.grams.len() + other.grams.len();
        if total == 0 {
            return 0.0;
        }
        let (mut i, mut j, mut shared) = (0, 0, 0usize);
        while i < self.grams.len() && j < other.grams.len() {
            match self.grams[i].cmp(&other.grams[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        (2 * shared) as f64 / total as f64
    }
}
