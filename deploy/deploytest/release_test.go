package deploytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deploy/build-release.sh for the target CI runs on (whose packages the
// image's build has compiled already: a second target would compile every
// dependency again, minutes of CI): the archive holds mcpd and mcpd-import
// with the version and commit linked in, SHA256SUMS matches it, the binary
// runs and says its version, and a second build of the same commit gives
// the same bytes. (Windows' .zip archives are not built in CI.)
func TestReleaseArchives(t *testing.T) {
	requireDeployTests(t, "git")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	version := git("describe", "--tags", "--always", "--dirty")
	revision := git("rev-parse", "HEAD")
	out := t.TempDir()
	release := func(targets ...string) []string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{filepath.Join(root, "deploy", "build-release.sh"), "-o", out}, targets...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("build-release.sh: %v\n%s", err, stderr.String())
		}
		return strings.Fields(string(stdout))
	}
	linux := "mcpd_" + version + "_linux_amd64"
	names := release("linux/amd64")
	if !slices.Equal(names, []string{linux + ".tar.gz"}) {
		t.Fatalf("archives %q", names)
	}

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		hashes[n] = hex.EncodeToString(h[:])
		if !strings.Contains(string(sums), hashes[n]+"  "+n+"\n") {
			t.Errorf("SHA256SUMS lacks %s %s:\n%s", hashes[n], n, sums)
		}
	}

	// The tar.gz: its files, their modes, and a binary that runs.
	f, err := os.Open(filepath.Join(out, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	bin := t.TempDir()
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, h.Name)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if base := filepath.Base(h.Name); base == "mcpd" || base == "mcpd-import" {
			if h.Mode&0o111 == 0 || h.Uid != 0 {
				t.Errorf("%s: mode %o uid %d, want executable and owned by 0", h.Name, h.Mode, h.Uid)
			}
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(filepath.Join(bin, base), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, want := range []string{linux + "/README.md", linux + "/mcpd", linux + "/mcpd-import"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s holds %q, not %s", names[0], files, want)
		}
	}
	v, err := exec.Command(filepath.Join(bin, "mcpd"), "version").Output()
	if want := "mcpd " + version + " (commit " + revision[:12]; err != nil || !strings.HasPrefix(string(v), want) {
		t.Errorf("mcpd version = %q, %v; want it to start with %q", v, err, want)
	}
	for _, b := range []string{"mcpd", "mcpd-import"} {
		data, err := os.ReadFile(filepath.Join(bin, b))
		if err != nil {
			t.Fatal(err)
		}
		checkSettings(t, b, data, "linux", "amd64", version, revision)
	}

	// The same commit again: the same bytes.
	first := hashes[names[0]]
	release("linux/amd64")
	b, err := os.ReadFile(filepath.Join(out, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != first {
		t.Errorf("a second build of %s differs from the first", names[0])
	}
}

// checkSettings checks that a binary was built CGO-free and trimmed for
// its target, with the version and commit linked in. (With -trimpath Go
// does not record -ldflags, so the linked strings are looked for in the
// binary itself.)
func checkSettings(t *testing.T, name string, bin []byte, goos, goarch, version, revision string) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"] != goos || settings["GOARCH"] != goarch {
		t.Errorf("%s: build settings %v, want CGO_ENABLED=0, -trimpath, %s/%s", name, settings, goos, goarch)
	}
	if !bytes.Contains(bin, []byte(version)) || !bytes.Contains(bin, []byte(revision)) {
		t.Errorf("%s: the version %s or the commit %s is not linked in", name, version, revision)
	}
}
