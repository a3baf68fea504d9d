// Package image checks the image `make image` builds, reading the OCI archive with nothing
// but the standard library (not the builder's own library): its index and tag, each
// platform's config (user, entrypoint, labels), the blobs' digests, and the scheduler binary
// taken out of the host platform's layer, run to print its version.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Only the fields the test reads of the OCI image spec's documents.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type index struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// versionInfo is what `--version=raw` and `kubectl lockstep version -o json` print.
type versionInfo struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
}

const repository = "example.test/lockstep/lockstep-scheduler"

// TestImage builds the image of this machine's platform as `make image` does (the
// scheduler's static binary, but for -trimpath), checks it, and runs the binary taken out of
// it.
func TestImage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "linux" {
		t.Fatalf("no image for this machine (%s/%s) to run", runtime.GOOS, runtime.GOARCH)
	}
	host := "linux/" + runtime.GOARCH
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	// Without -trimpath, the one build flag of make image's that the rest of make test does
	// not use, so that the scheduler's packages are not compiled a second time.
	run(t, root, "make", "image", "build", "IMAGE="+repository, "IMAGE_TAR="+tarPath, "PLATFORMS="+host, "IMAGE_BUILDFLAGS=")
	wantVersion := strings.TrimSpace(run(t, root, "hack/version.sh"))
	wantCommit := strings.TrimSpace(run(t, root, "git", "rev-parse", "HEAD"))

	binaries := readImage(t, tarPath, wantVersion, wantCommit)
	if got := slices.Sorted(maps.Keys(binaries)); !slices.Equal(got, []string{host}) {
		t.Fatalf("platforms %q, want %s", got, host)
	}

	// The binary taken out of the image runs, and says the version its labels and tag say.
	bin := filepath.Join(t.TempDir(), "lockstep-scheduler")
	if err := os.WriteFile(bin, binaries[host], 0o755); err != nil {
		t.Fatal(err)
	}
	if out := run(t, root, bin, "--version"); !strings.HasPrefix(out, "lockstep-scheduler "+wantVersion+" (commit "+wantCommit[:12]) ||
		!strings.Contains(out, "kube-scheduler framework v1.") {
		t.Errorf("--version printed %q, want lockstep-scheduler %s (commit %s...), kube-scheduler framework v1...", out, wantVersion, wantCommit[:12])
	}
	for _, cmd := range [][]string{{bin, "--version=raw"}, {filepath.Join(root, "bin", "kubectl-lockstep"), "version", "-o", "json"}} {
		var got versionInfo
		decode(t, []byte(run(t, root, cmd[0], cmd[1:]...)), &got)
		if got != (versionInfo{Version: wantVersion, GitCommit: wantCommit}) {
			t.Errorf("%q printed %+v, want version %s, commit %s", cmd, got, wantVersion, wantCommit)
		}
	}
}

// TestImageIndexHoldsEachPlatform runs the image builder (tools/image, what `make image`
// runs after its builds) on a static binary per platform of `make image`'s default
// PLATFORMS: the index holds one image per platform, each with that platform's binary
// alone. A small program stands in for the scheduler, whose build for each platform is
// `make image`'s and is not repeated here (the host's is TestImage's).
func TestImageIndexHoldsEachPlatform(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	platforms := strings.Fields(strings.TrimSpace(run(t, root, "make", "--no-print-directory", "-s", "print-platforms")))
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("make image builds %q, want linux/amd64 and linux/arm64", platforms)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", ".", "-out", filepath.Join(dir, "image.tar"), "-tag", repository + ":v9.9.9", "-version", "v9.9.9",
		"-revision", "0123456789abcdef0123456789abcdef01234567", "-created", "2026-01-02T03:04:05Z"}
	want := map[string][]byte{}
	for _, p := range platforms {
		out := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p[:strings.Index(p, "/")], "GOARCH="+p[strings.Index(p, "/")+1:])
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the stand-in for %s: %v\n%s", p, err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = data
		args = append(args, "-binary", p+"="+out)
	}
	run(t, filepath.Join(root, "tools", "image"), "go", args...)

	got := readImage(t, filepath.Join(dir, "image.tar"), "v9.9.9", "0123456789abcdef0123456789abcdef01234567")
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, platforms) {
		t.Fatalf("platforms %q, want %q", names, platforms)
	}
	for _, p := range platforms {
		if !bytes.Equal(got[p], want[p]) {
			t.Errorf("%s: the image's binary is not the one given for %s", p, p)
		}
	}
}

// readImage reads an OCI archive make image wrote, checks its layout, tag, and each
// platform's config, labels, single layer and static binary, and returns each platform's
// binary.
func readImage(t *testing.T, tarPath, wantVersion, wantCommit string) map[string][]byte {
	t.Helper()
	files := readTar(t, tarPath)
	blob := func(d descriptor) []byte {
		t.Helper()
		data, ok := files["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
		if !ok {
			t.Fatalf("blob %s missing", d.Digest)
		}
		if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(data)) != d.Size {
			t.Fatalf("blob %s: digest or size (%d, want %d) does not match", d.Digest, len(data), d.Size)
		}
		return data
	}
	if !strings.Contains(string(files["oci-layout"]), `"imageLayoutVersion"`) {
		t.Fatalf("no oci-layout file: %q", files["oci-layout"])
	}
	var top index
	decode(t, files["index.json"], &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("index.json holds %+v, want one image index", top.Manifests)
	}
	if ref, want := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"], repository+":"+wantVersion; ref != want {
		t.Errorf("tagged %q, want %q (the version hack/version.sh gives)", ref, want)
	}

	var idx index
	decode(t, blob(top.Manifests[0]), &idx)
	binaries := map[string][]byte{}
	for _, d := range idx.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		if _, dup := binaries[platform]; dup {
			t.Errorf("two images for %s", platform)
		}
		var m manifest
		decode(t, blob(d), &m)
		var c config
		decode(t, blob(m.Config), &c)
		if c.OS+"/"+c.Architecture != platform {
			t.Errorf("%s: config says %s/%s", platform, c.OS, c.Architecture)
		}
		if c.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want the non-root 65532:65532", platform, c.Config.User)
		}
		if !slices.Equal(c.Config.Entrypoint, []string{"/lockstep-scheduler"}) {
			t.Errorf("%s: entrypoint %q", platform, c.Config.Entrypoint)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.version":  wantVersion,
			"org.opencontainers.image.revision": wantCommit,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://github.com/lockstep-sched/lockstep",
		} {
			if got := c.Config.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", platform, k, got, want)
			}
		}
		if len(m.Layers) != 1 {
			t.Fatalf("%s: %d layers, want the binary's alone", platform, len(m.Layers))
		}
		layer := readLayer(t, blob(m.Layers[0]))
		if names := slices.Sorted(maps.Keys(layer)); !slices.Equal(names, []string{"lockstep-scheduler"}) {
			t.Errorf("%s: layer holds %q, want the binary alone", platform, names)
		}
		assertStatic(t, platform, layer["lockstep-scheduler"].data)
		if layer["lockstep-scheduler"].mode&0o111 == 0 {
			t.Errorf("%s: the binary is not executable (mode %o)", platform, layer["lockstep-scheduler"].mode)
		}
		binaries[platform] = layer["lockstep-scheduler"].data
	}
	return binaries
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.String())
	}
	return string(out)
}

func decode(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %q: %v", truncate(data), err)
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// readTar reads the regular files of an uncompressed tarball.
func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	for name, e := range entries(t, f) {
		files[name] = e.data
	}
	return files
}

type entry struct {
	data []byte
	mode int64
}

// readLayer reads a gzipped layer.
func readLayer(t *testing.T, blob []byte) map[string]entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatalf("layer is not gzipped: %v", err)
	}
	return entries(t, zr)
}

func entries(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	tr := tar.NewReader(r)
	out := map[string]entry{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(hdr.Name, "./")] = entry{data: data, mode: hdr.Mode}
	}
}

// assertStatic checks that a binary is an ELF for its platform's architecture that needs no
// dynamic loader: the image holds nothing else.
func assertStatic(t *testing.T, platform string, data []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: not an ELF binary: %v", platform, err)
		return
	}
	want := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
	if f.Machine != want {
		t.Errorf("%s: binary for %v", platform, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: the binary is dynamically linked; the image has no libc", platform)
		}
	}
}
