package webfetch

import (
	"bytes"
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlText reduces an HTML page to its title and readable text: headings
// as "#" lines, list items as "- " lines, links as "text (href)", block
// elements on lines of their own, and nothing of scripts, styles, forms,
// images or the head.
func htmlText(page []byte) (title, text string) {
	w := &textWriter{}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		// html.Parse refuses a page nested deeper than 512 elements; its
		// tags, read in order, still say where each text goes.
		w.tokens(page)
	} else {
		w.walk(doc)
	}
	return strings.TrimSpace(collapseSpaces(w.title.String())), w.b.String()
}

type textWriter struct {
	b       strings.Builder
	title   strings.Builder
	inTitle bool
	pre     int    // depth inside <pre>
	links   []link // the <a> elements open
}

// link is an open <a>: where its text starts, and its href.
type link struct {
	start int
	href  string
}

// skipped are elements whose content is not text for a reader.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Form: true, atom.Select: true, atom.Button: true, atom.Img: true,
	atom.Head: true,
}

// blocks are elements that start and end a line.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true,
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Table: true, atom.Tr: true, atom.Blockquote: true, atom.Pre: true,
	atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Address: true,
}

var headings = map[atom.Atom]string{
	atom.H1: "# ", atom.H2: "## ", atom.H3: "### ", atom.H4: "#### ", atom.H5: "##### ", atom.H6: "###### ",
}

func (w *textWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
		if n.DataAtom == atom.Head {
			// The title is the only text of the head worth keeping.
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.DataAtom == atom.Title {
					w.walk(c)
				}
			}
			return
		}
		if skipped[n.DataAtom] {
			return
		}
		w.open(n.DataAtom, attr(n.Attr, "href"))
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			w.walk(c)
		}
		w.close(n.DataAtom)
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// tokens reduces a page read as a stream of tags and texts, as walk reduces
// its tree: for a page html.Parse refuses.
func (w *textWriter) tokens(page []byte) {
	z := html.NewTokenizer(bytes.NewReader(page))
	skip := 0       // depth inside skipped elements
	inHead := false // text of the head, but its title, is not kept
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		tok := z.Token()
		a := tok.DataAtom
		switch tt {
		case html.TextToken:
			if skip == 0 && (!inHead || w.inTitle) {
				w.text(tok.Data)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			switch {
			case a == atom.Head:
				inHead = true
			case a == atom.Body:
				inHead = false
			case skipped[a]:
				if tt == html.StartTagToken && a != atom.Img {
					skip++
				}
			case skip > 0 || inHead && a != atom.Title:
			default:
				w.open(a, attr(tok.Attr, "href"))
				if tt == html.SelfClosingTagToken || a == atom.Br || a == atom.Hr {
					w.close(a)
				}
			}
		case html.EndTagToken:
			switch {
			case a == atom.Head:
				inHead = false
			case skipped[a]:
				if skip > 0 && a != atom.Img {
					skip--
				}
			case skip > 0 || inHead && a != atom.Title:
			default:
				w.close(a)
			}
		}
	}
}

// text writes the text of a text node.
func (w *textWriter) text(s string) {
	switch {
	case w.inTitle:
		w.title.WriteString(s)
	case w.pre > 0:
		w.b.WriteString(s)
	default:
		w.inline(collapseSpaces(s))
	}
}

// open writes what starts element a; close what ends it. href is an
// <a>'s link.
func (w *textWriter) open(a atom.Atom, href string) {
	switch {
	case a == atom.Title:
		w.inTitle = true
	case headings[a] != "":
		w.paragraph()
		w.b.WriteString(headings[a])
	case a == atom.Li:
		w.newline()
		w.b.WriteString("- ")
	case a == atom.Br:
		w.b.WriteString("\n")
	case a == atom.A:
		w.links = append(w.links, link{start: w.b.Len(), href: href})
	case a == atom.Pre:
		w.paragraph()
		w.b.WriteString("```\n")
		w.pre++
	case blocks[a]:
		w.paragraph()
	}
}

func (w *textWriter) close(a atom.Atom) {
	switch {
	case a == atom.Title:
		w.inTitle = false
	case headings[a] != "":
		w.paragraph()
	case a == atom.Li:
		w.newline()
	case a == atom.Td || a == atom.Th:
		w.b.WriteString(" | ")
	case a == atom.A:
		if len(w.links) == 0 {
			return
		}
		l := w.links[len(w.links)-1]
		w.links = w.links[:len(w.links)-1]
		linkText := strings.TrimSpace(w.b.String()[min(l.start, w.b.Len()):])
		if l.href != "" && !strings.HasPrefix(l.href, "#") && !strings.HasPrefix(l.href, "javascript:") && l.href != linkText {
			w.b.WriteString(" (" + l.href + ")")
		}
	case a == atom.Pre:
		if w.pre > 0 {
			w.pre--
		}
		w.newline()
		w.b.WriteString("```")
		w.paragraph()
	case blocks[a]:
		w.paragraph()
	}
}

// inline writes text, with a space between it and what came before unless
// a line just started.
func (w *textWriter) inline(s string) {
	if strings.TrimSpace(s) == "" {
		if s != "" && !w.atLineStart() && !strings.HasSuffix(w.b.String(), " ") {
			w.b.WriteByte(' ')
		}
		return
	}
	if w.atLineStart() {
		s = strings.TrimLeft(s, " ")
	}
	w.b.WriteString(s)
}

// atLineStart says whether nothing but a list item's "- " is on the line
// being written. It looks at the last bytes alone: it runs for every text of
// a page, and a scan back to the line's start made a page of many inline
// elements on one line take quadratic time.
func (w *textWriter) atLineStart() bool {
	s := w.b.String()
	if s == "" || strings.HasSuffix(s, "\n") {
		return true
	}
	rest, ok := strings.CutSuffix(s, "- ")
	return ok && (rest == "" || strings.HasSuffix(rest, "\n"))
}

func (w *textWriter) newline() {
	if !strings.HasSuffix(w.b.String(), "\n") && w.b.Len() > 0 {
		w.b.WriteByte('\n')
	}
}

func (w *textWriter) paragraph() {
	w.newline()
	if w.b.Len() > 0 && !strings.HasSuffix(w.b.String(), "\n\n") {
		w.b.WriteByte('\n')
	}
}

func attr(attrs []html.Attribute, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

var spaces = regexp.MustCompile(`[ \t\r\n\f]+`)

func collapseSpaces(s string) string { return spaces.ReplaceAllString(s, " ") }

var manyNewlines = regexp.MustCompile(`\n{3,}`)
var trailingSpaces = regexp.MustCompile(`[ \t]+\n`)

// cleanWhitespace trims lines' trailing spaces, keeps at most one blank line
// in a row, and trims the ends.
func cleanWhitespace(s string) string {
	s = trailingSpaces.ReplaceAllString(s, "\n")
	return strings.TrimSpace(manyNewlines.ReplaceAllString(s, "\n\n"))
}
