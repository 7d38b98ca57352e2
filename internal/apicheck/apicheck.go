// Package apicheck checks the module's public API as source, from each
// package's own tests: what go doc shows must be readable outside it.
package apicheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// NoBareNode fails t for every exported declaration of the Go files in
// dir (not its subfolders, not tests) that names GoMLX's graph.Node as a
// bare Node: files that dot-import the graph package may use Node inside,
// but a function signature, method, or field or method of an exported type
// must say graph.Node, or go doc shows a *Node readers cannot resolve.
func NoBareNode(t testing.TB, dir string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dot := false
		for _, im := range f.Imports {
			if im.Name != nil && im.Name.Name == "." && im.Path.Value == `"github.com/gomlx/gomlx/pkg/core/graph"` {
				dot = true
			}
		}
		if !dot {
			return nil
		}
		report := func(n ast.Node, what string) {
			ast.Inspect(n, func(x ast.Node) bool {
				switch x := x.(type) {
				case *ast.SelectorExpr:
					return false // graph.Node and the like
				case *ast.Ident:
					if x.Name == "Node" {
						t.Errorf("%s: %s uses bare Node (write graph.Node)", fset.Position(x.Pos()), what)
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
					report(d.Type, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					switch tt := ts.Type.(type) {
					case *ast.StructType:
						for _, fl := range tt.Fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									report(fl.Type, ts.Name.Name+"."+n.Name)
								}
							}
						}
					case *ast.InterfaceType:
						report(tt, ts.Name.Name)
					default:
						report(tt, ts.Name.Name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
