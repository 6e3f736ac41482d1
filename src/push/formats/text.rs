//! Text within a service's limits: counted and cut by characters (Unicode scalar values, as the
//! services count them), never by bytes, so no character is ever split; a cut text ends with an
//! ellipsis, so a reader sees that something was left out.
use std::fmt::Write;

/// What ends a cut text (one character).
pub const ELLIPSIS: char = '…';

/// How a text is written in a message: as it is, or escaped (Slack's `mrkdwn` and `plain_text`
/// take `&`, `<` and `>` as entities, and a raw `<` would start a link or a mention).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    None,
    Slack,
}

impl Escape {
    fn of(self, c: char) -> Option<&'static str> {
        match (self, c) {
            (Self::Slack, '&') => Some("&amp;"),
            (Self::Slack, '<') => Some("&lt;"),
            (Self::Slack, '>') => Some("&gt;"),
            _ => None,
        }
    }

    /// How many characters `c` takes once written.
    fn width(self, c: char) -> usize {
        self.of(c).map_or(1, str::len)
    }
}

/// The characters of `text`.
pub fn chars(text: &str) -> usize {
    text.chars().count()
}

/// `text` written with `escape` in at most `max` characters: whole when it fits, else as many
/// whole characters (an escaped one whole, never half an entity) as fit before an ellipsis.
pub fn clip(text: &str, max: usize, escape: Escape) -> String {
    let width: usize = text.chars().map(|c| escape.width(c)).sum();
    let mut out = String::with_capacity(text.len().min(4 * max));
    let room = if width <= max {
        usize::MAX
    } else if max == 0 {
        return out;
    } else {
        max - 1
    };
    let mut used = 0;
    for c in text.chars() {
        let w = escape.width(c);
        if used + w > room {
            break;
        }
        used += w;
        match escape.of(c) {
            Some(entity) => out.push_str(entity),
            None => out.push(c),
        }
    }
    if width > max {
        out.push(ELLIPSIS);
    }
    out
}

/// One line of a composed text: `Whole` is written entire or left out (a link cut in the middle
/// would be broken), `Cut` is cut to what room is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Already written (escaped) text.
    Whole(String),
    /// Raw text, escaped and cut as it is written.
    Cut(String),
}

/// `lines` joined by newlines in at most `max` characters: each whole line while it fits, each
/// cut line cut to the room left (an empty result of a cut is left out with its newline).
pub fn compose(lines: &[Line], max: usize, escape: Escape) -> String {
    let mut out = String::new();
    let mut used = 0;
    for line in lines {
        let sep = usize::from(!out.is_empty());
        if used + sep >= max {
            break;
        }
        let room = max - used - sep;
        let text = match line {
            Line::Whole(text) if chars(text) <= room => text.clone(),
            Line::Whole(_) => continue,
            Line::Cut(raw) => clip(raw, room, escape),
        };
        if text.is_empty() {
            continue;
        }
        if sep == 1 {
            out.push('\n');
        }
        used += sep + chars(&text);
        let _ = write!(out, "{text}");
    }
    out
}

/// `camelCase` or `snake_case` as words with a capital: `votingPower` → `Voting power`,
/// `proposal_created` → `Proposal created` (a kind or a member this build does not know reads
/// as well as one it does).
pub fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c == '_' || c == '-' {
            out.push(' ');
        } else if c.is_uppercase() && i > 0 {
            out.push(' ');
            out.extend(c.to_lowercase());
        } else if i == 0 {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_that_fits_is_unchanged() {
        assert_eq!(clip("Fund the grants program", 23, Escape::None), "Fund the grants program");
        assert_eq!(clip("", 0, Escape::None), "");
        assert_eq!(clip("a < b", 9, Escape::Slack), "a &lt; b");
    }

    #[test]
    fn a_long_text_is_cut_by_characters_with_an_ellipsis() {
        // Two-, three- and four-byte characters: a cut by bytes would split one of them.
        let text = "é漢😀".repeat(100);
        for max in [1, 2, 3, 10, 255, 256, 299] {
            let cut = clip(&text, max, Escape::None);
            assert_eq!(chars(&cut), max, "{max}");
            assert!(cut.ends_with(ELLIPSIS), "{cut}");
            assert!(text.starts_with(cut.trim_end_matches(ELLIPSIS)), "a prefix of whole characters: {cut}");
        }
        assert_eq!(clip(&text, 0, Escape::None), "");
        assert_eq!(clip("abcdef", 4, Escape::None), "abc…");
    }

    #[test]
    fn an_escaped_text_is_cut_between_entities() {
        // `&` takes five characters once written; the cut never leaves half an entity.
        assert_eq!(clip("a&b&c", 13, Escape::Slack), "a&amp;b&amp;c");
        assert_eq!(clip("a&b&c", 12, Escape::Slack), "a&amp;b…");
        assert_eq!(clip("a&b&c", 8, Escape::Slack), "a&amp;b…");
        assert_eq!(clip("a&b&c", 6, Escape::Slack), "a…");
        for max in 1..40 {
            let cut = clip("<!channel> & <@U123|x> é", max, Escape::Slack);
            assert!(chars(&cut) <= max, "{max}: {cut}");
            assert!(!cut.contains('<') && !cut.contains('>'), "{cut}");
            let kept = cut.trim_end_matches(ELLIPSIS);
            assert!(kept.rfind('&').is_none_or(|at| kept[at..].contains(';')), "{max}: {cut}");
        }
    }

    #[test]
    fn composed_lines_keep_links_whole_and_cut_the_rest() {
        let lines = [
            Line::Cut("Notable vote".to_owned()),
            Line::Whole("<https://x.example/p|the proposal>".to_owned()),
            Line::Cut("a summary that goes on and on".to_owned()),
        ];
        let all = compose(&lines, 1_000, Escape::Slack);
        assert_eq!(all, "Notable vote\n<https://x.example/p|the proposal>\na summary that goes on and on");
        // Too little room for the link: it is left out, and the summary is cut to the rest.
        let short = compose(&lines, 30, Escape::Slack);
        assert_eq!(short, "Notable vote\na summary that g…");
        assert_eq!(chars(&short), 30);
        for max in 0..80 {
            assert!(chars(&compose(&lines, max, Escape::Slack)) <= max, "{max}");
        }
    }

    #[test]
    fn names_read_as_words() {
        assert_eq!(words("votingPower"), "Voting power");
        assert_eq!(words("proposal_created"), "Proposal created");
        assert_eq!(words("voting_ends_soon"), "Voting ends soon");
        assert_eq!(words("scoresTotal"), "Scores total");
        assert_eq!(words(""), "");
    }
}
