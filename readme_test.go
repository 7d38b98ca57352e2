package grpokit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLibraryProgram builds the README's "As a library" program as a
// user would paste it, runs it in a folder of its own, and checks that it prints what the README says it
// prints: the README's own code cannot drift from the API unnoticed.
func TestReadmeLibraryProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program (go run)")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "**As a library**")
	if i < 0 {
		t.Fatal(`README has no "**As a library**" section`)
	}
	block := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(text[i:])
	claim := regexp.MustCompile("(?s)it prints `(.*?)`").FindStringSubmatch(text[i:])
	if block == nil || claim == nil {
		t.Fatal("README's library section has no go block, or no 'it prints `…`' claim before it")
	}
	want := strings.Join(strings.Fields(claim[1]), " ") // the claim is wrapped across lines
	// A folder inside the module (the go tool skips names starting with _
	// in ./... but builds them when named), removed afterwards.
	dir, err := os.MkdirTemp(".", "_readme-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(block[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir() // the program writes initial-model/ and runs/ where it runs
	prog := filepath.Join(work, "colors")
	if out, err := exec.Command("go", "build", "-o", prog, "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
		t.Fatalf("build the README's program: %v\n%s", err, out)
	}
	cmd := exec.Command(prog)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run the README's program: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("the README's program printed\n%s\nwant a line %q", out, want)
	}
}
