package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

func TestFill(t *testing.T) {
	f := errs.Facts{"name": "gh-token", "path": "/x/{name}"}
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"hobbs vault set {name}", "hobbs vault set gh-token"},
		{"{name} and {name}", "gh-token and gh-token"},
		{"{path}", "/x/{name}"}, // a fact's value is not filled again
		{"{missing} stays", "{missing} stays"},
		{"a {brace", "a {brace"},
		{"{a {name}}", "{a gh-token}"},
	} {
		if got := fill(c.in, f); got != c.want {
			t.Errorf("fill(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEveryKindHasWords finds every errs.Kind constant declared under src/
// and checks the command layer words it: advice without words would print
// no hint.
func TestEveryKindHasWords(t *testing.T) {
	declared := map[string]string{} // kind → where
	root := filepath.Join("..", "..", "src")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if !isKindType(vs.Type) {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Errorf("%s: kind %s is not a string literal", fset.Position(v.Pos()), vs.Names[i])
						continue
					}
					k, _ := strconv.Unquote(lit.Value)
					if prev, dup := declared[k]; dup {
						t.Errorf("%s: kind %q declared twice (also %s)", fset.Position(v.Pos()), k, prev)
					}
					declared[k] = fset.Position(v.Pos()).String()
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, where := range declared {
		if _, ok := hintWords[errs.Kind(k)]; !ok {
			t.Errorf("%s: kind %q has no words in cmd/hobbs/hints_*.go", where, k)
		}
	}
	for k := range hintWords {
		if _, ok := declared[string(k)]; !ok {
			t.Errorf("words for %q, which no package under src/ declares", k)
		}
	}
}

func isKindType(e ast.Expr) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "errs" && s.Sel.Name == "Kind"
}
