package torchref

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"info": "torch 1.13, 2 threads", "seconds": {"prefill": 2.1, "decode": 0.21}}`)
	v, info, err := Load(good, "seconds")
	if err != nil || info != "torch 1.13, 2 threads" || v["prefill"] != 2.1 || v["decode"] != 0.21 {
		t.Errorf("Load = %v, %q, %v", v, info, err)
	}
	if v, _, err := Load("", "gflops"); err != nil || len(v) != 0 {
		t.Errorf("no file: %v, %v", v, err)
	}
	for _, tc := range []struct{ name, path, key, want string }{
		{"missing file", filepath.Join(dir, "nope.json"), "seconds", "no such file"},
		{"not JSON", write("bad.json", `{"seconds":`), "seconds", "bad.json"},
		{"other table", good, "gflops", `no "gflops" table`},
		{"table of strings", write("str.json", `{"gflops": {"a": "fast"}}`), "gflops", "gflops"},
	} {
		if _, _, err := Load(tc.path, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
