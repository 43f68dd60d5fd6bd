package sessionstore_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublicAPINamesNoInternalType: `go doc -all` of every public
// package (no internal/ element in its path, no command) names no type,
// function or value of an internal package it imports (issue 26: "no
// exported identifier of any public package mentions an internal
// package's type"). An internal package's identifiers appear in go doc
// qualified by its package name, so each public package's doc is
// searched for "name." and an exported name, for the name of each
// internal package it imports.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	goTool, out := goList(t, "ImportPath,Name,Imports")
	type pkg struct {
		ImportPath, Name string
		Imports          []string
	}
	var pkgs []pkg
	names := map[string]string{} // import path -> package name
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
		names[p.ImportPath] = p.Name
	}
	internal := func(path string) bool {
		return strings.Contains(path+"/", "/internal/") || strings.Contains(path+"/", "/testdata/")
	}
	checked := 0
	for _, p := range pkgs {
		if internal(p.ImportPath) || p.Name == "main" || strings.Contains(p.ImportPath, "/bench") {
			continue
		}
		doc, err := exec.Command(goTool, "doc", "-all", p.ImportPath).Output()
		require.NoError(t, err, "go doc -all %s", p.ImportPath)
		checked++
		for _, imp := range p.Imports {
			name, ok := names[imp]
			if !ok || !internal(imp) {
				continue
			}
			re := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + regexp.QuoteMeta(name) + `\.[A-Z]\w*`)
			for line := range strings.SplitSeq(string(doc), "\n") {
				if m := re.FindString(line); m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					t.Errorf("%s: go doc names %s (package %s): %s", p.ImportPath, strings.TrimLeft(m, " *[]()"), imp, strings.TrimSpace(line))
				}
			}
		}
	}
	require.Greater(t, checked, 10, "the public packages were found")
}

// TestEveryPackageHasDocGo: every package of the module, commands
// included, says what it owns in a doc.go of its own (the house rule: a
// doc.go per package), and no other file of it carries a package comment,
// so that go doc shows the one in doc.go and nothing else competes with it.
func TestEveryPackageHasDocGo(t *testing.T) {
	_, out := goList(t, "ImportPath,Dir,Doc,GoFiles")
	checked := 0
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p struct {
			ImportPath, Dir, Doc string
			GoFiles              []string
		}
		require.NoError(t, dec.Decode(&p))
		if strings.Contains(p.ImportPath+"/", "/testdata/") {
			continue
		}
		checked++
		require.Contains(t, p.GoFiles, "doc.go", "%s has no doc.go", p.ImportPath)
		require.NotEmpty(t, p.Doc, "%s: go doc shows no package comment", p.ImportPath)
		for _, name := range p.GoFiles {
			if name == "doc.go" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			require.NoError(t, err)
			require.NotRegexp(t, `(?m)^// Package `+regexp.QuoteMeta(path.Base(p.ImportPath))+` `, string(src),
				"%s: a package comment outside doc.go", filepath.Join(p.ImportPath, name))
		}
	}
	require.Greater(t, checked, 40, "go list found too few packages")
}

// goList returns the go tool's path and `go list -json=FIELDS ./...` of
// the module; it skips the test in -short mode or without a go tool.
func goList(t *testing.T, fields string) (goTool string, out []byte) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err = exec.Command(goTool, "list", "-json="+fields, "./...").Output()
	require.NoError(t, err, "go list")
	return goTool, out
}
