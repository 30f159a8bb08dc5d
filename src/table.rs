//! A plain text table with aligned columns, for the human output of every command.

/// Rows of cells under a header; numbers are formatted by the caller.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<bool>,
}

impl Table {
    /// A table with these column titles; columns listed in `right` are right-aligned.
    pub fn new(header: &[&str], right: &[usize]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            right: (0..header.len()).map(|i| right.contains(&i)).collect(),
        }
    }

    /// Appends a row (missing trailing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The column titles.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// The rows.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    /// Whether column `i` is right-aligned (numbers).
    pub fn right_aligned(&self, i: usize) -> bool {
        self.right.get(i).copied().unwrap_or(false)
    }

    /// The table as text, one line per row, two spaces between columns, no trailing blanks.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let width = |i: usize| {
            std::iter::once(&self.header)
                .chain(&self.rows)
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..n).map(width).collect();
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - cell.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                if self.right[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&["name", "value"], &[1]);
        t.row(vec!["a".into(), "1.5".into()]);
        t.row(vec!["longer".into(), "12.25".into()]);
        assert_eq!(t.render(), "name    value\na         1.5\nlonger  12.25\n");
    }
}
