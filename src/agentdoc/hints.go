package agentdoc

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// Hint is the text of a hint found in Go source: what a user is told to do
// next (an error's hint, a doctor check's fix).
type Hint struct {
	Pos  string // file:line
	Text string
}

// Hints extracts the hints of a package's Go files: the format of a call
// to a method or function named hint (its first argument) or withHint (its
// second: cmd/hobbs's own errors), the first argument of say or fill (the
// words of a kind of advice, cmd/hobbs/hints_*.go: text with {fact}
// placeholders), the Hint and Fix fields of composite literals, and
// the constants whose name ends in Hint. A hint's text is a string literal, a sum of them, a
// constant of the package, or the format of a fmt.Sprintf among those; a
// hint built otherwise is not found.
func Hints(fset *token.FileSet, files []*ast.File) []Hint {
	consts := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						consts[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.BinaryExpr:
			if e.Op != token.ADD {
				return "", false
			}
			a, ok1 := eval(e.X)
			b, ok2 := eval(e.Y)
			return a + b, ok1 && ok2
		case *ast.Ident:
			if c, ok := consts[e.Name]; ok {
				return eval(c)
			}
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.CallExpr:
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
				return eval(e.Args[0])
			}
		}
		return "", false
	}
	var out []Hint
	add := func(at token.Pos, e ast.Expr) {
		if s, ok := eval(e); ok && s != "%s" {
			p := fset.Position(at)
			out = append(out, Hint{Pos: p.Filename + ":" + strconv.Itoa(p.Line), Text: s})
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				switch {
				case (name == "hint" || name == "say" || name == "fill") && len(n.Args) > 0:
					add(n.Pos(), n.Args[0])
				case name == "withHint" && len(n.Args) > 1:
					add(n.Pos(), n.Args[1])
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && (k.Name == "Hint" || k.Name == "Fix") {
					add(n.Pos(), n.Value)
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasSuffix(id.Name, "Hint") && i < len(n.Values) {
						add(n.Pos(), n.Values[i])
					}
				}
			}
			return true
		})
	}
	return out
}

var (
	verbRe    = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]|\{[a-z][a-z0-9_]*\}`)
	wordRe    = regexp.MustCompile(`^([a-z][a-z0-9_.-]*|--?[a-z][a-z0-9-]*(=\S*)?|[A-Z][A-Z0-9_]*|<[^>]+>|-)$`)
	inlineAny = regexp.MustCompile("`[^`]*`")
)

// TextCommands extracts the hobbs invocations of plain text, a hint or a
// status line: those in backquotes (as Commands finds them), and "hobbs"
// followed by command words (lower-case words, flags, upper-case
// placeholders, <placeholders>) up to the first word that is none of
// those or ends with punctuation. A format verb (%s) or a fact ({name})
// stands for a value, VALUE; a flag made with one (--%s) cannot be checked, and ends the
// command.
func TextCommands(text string) []Command {
	text = verbRe.ReplaceAllString(text, "VALUE")
	out := Commands([]byte(text))
	words := strings.Fields(inlineAny.ReplaceAllString(text, " "))
	for i := 0; i < len(words); i++ {
		if strings.TrimLeft(words[i], "(\"'") != "hobbs" {
			continue
		}
		c := Command{Line: 1, Text: text}
		for _, w := range words[i+1:] {
			bare := strings.TrimRight(w, ",;:.)!?\"'")
			if !wordRe.MatchString(bare) || strings.HasPrefix(bare, "-") && strings.Contains(bare, "VALUE") {
				break
			}
			c.Args = append(c.Args, bare)
			if bare != w {
				break
			}
		}
		out = append(out, c)
	}
	return out
}
