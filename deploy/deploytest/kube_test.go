package deploytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// kubeVolumes are the named volumes podman 4 makes of the Deployment's
// emptyDirs and of the ConfigMap; podman kube play --down leaves them.
var kubeVolumes = []string{"data", "tmp", "mcpd-config"}

// kubeManifests reads the example ConfigMap and the Deployment from
// deploy/kubernetes as one multi-document YAML for podman kube play, with
// the changes a single host needs: the image under test and the container
// ports published on loopback ports. The Deployment has no replicas field
// (the HPA owns the count), so podman plays one pod. Each change must apply exactly once, so that an edit of
// the manifests that breaks it fails here rather than testing something
// else.
func kubeManifests(t *testing.T, image, hostAddr, adminAddr string) (yaml string, probePaths []string) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "kubernetes", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	deployment := read("deployment.yaml")
	host, port, _ := strings.Cut(hostAddr, ":")
	adminHost, adminPort, _ := strings.Cut(adminAddr, ":")
	for _, r := range []struct{ old, new string }{
		{"image: localhost/mcpd:latest", "image: " + image},
		{"containerPort: 8080\n", fmt.Sprintf("containerPort: 8080\n              hostPort: %s\n              hostIP: %s\n", port, host)},
		{"containerPort: 9090\n", fmt.Sprintf("containerPort: 9090\n              hostPort: %s\n              hostIP: %s\n", adminPort, adminHost)},
	} {
		if n := strings.Count(deployment, r.old); n != 1 {
			t.Fatalf("deployment.yaml has %q %d times, want once", r.old, n)
		}
		deployment = strings.Replace(deployment, r.old, r.new, 1)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+path: (\S+)$`).FindAllStringSubmatch(deployment, -1) {
		probePaths = append(probePaths, m[1])
	}
	return read("configmap.yaml") + "---\n" + deployment, probePaths
}

// The Kubernetes manifests under podman kube play: the pod starts from the
// Deployment with the example ConfigMap mounted at /etc/mcpd, answers MCP in
// both eras with its SQLite file in the emptyDir under a read-only root,
// runs as 65532 without capabilities or privilege escalation, and its
// liveness and readiness probes pass. podman cannot run the probes itself
// (it turns httpGet into curl inside the container, and the image has no
// curl), so the test sends the probes' requests as the kubelet would; on
// SIGTERM, /readyz turns 503 and the pod exits 0.
func TestKubePlay(t *testing.T) {
	image := testImage(t)
	addr, adminAddr := freeAddr(t), freeAddr(t)
	yaml, probes := kubeManifests(t, image, addr, adminAddr)
	if !slices.Equal(probes, []string{"/healthz", "/healthz", "/readyz"}) {
		t.Fatalf("probe paths %v, want the startup, liveness and readiness probes /healthz, /healthz and /readyz", probes)
	}
	file := filepath.Join(t.TempDir(), "mcpd.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := bounded(t, 120*time.Second)
	// podman logs healthcheck timer errors where there is no systemd;
	// the pod runs all the same.
	// --replace and the volume removal: what an interrupted run left does
	// not stand in the way.
	podman(ctx, append([]string{"volume", "rm", "-f"}, kubeVolumes...)...)
	if out, err := podman(ctx, "kube", "play", "--replace", file); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("podman kube play:\n%s", out)
	}
	const ctr = "mcpd-pod-0-mcpd"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if t.Failed() {
			logs, _ := podman(ctx, "logs", ctr)
			t.Logf("container logs:\n%s", logs)
		}
		podman(ctx, "kube", "play", "--down", file)
		podman(ctx, append([]string{"volume", "rm", "-f"}, kubeVolumes...)...)
	})
	base, admin := "http://"+addr, "http://"+adminAddr
	if err := waitHTTP(ctx, base+"/mcp"); err != nil {
		t.Fatal(err)
	}
	for _, version := range eras {
		cs, err := connect(ctx, base+"/mcp", version, nil)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		names, err := toolNames(ctx, cs)
		if err != nil || !slices.Equal(names, []string{"greet", "list_notes"}) {
			t.Errorf("%s: tools/list = %v, %v", version, names, err)
		}
		if text, err := call(ctx, cs, "greet", map[string]any{"name": "pod"}); err != nil || text != "Hello, pod!" {
			t.Errorf("%s: greet = %q, %v", version, text, err)
		}
		if text, err := call(ctx, cs, "list_notes", nil); err != nil || !strings.Contains(text, "every replica reads the same ConfigMap") {
			t.Errorf("%s: list_notes = %q, %v", version, text, err)
		}
		cs.Close()
	}
	if uid := procStatus(t, ctr, "Uid"); uid != "65532 65532 65532 65532" {
		t.Errorf("Uid = %s, want 65532 (runAsUser)", uid)
	}
	if caps := procStatus(t, ctr, "CapEff"); caps != "0000000000000000" {
		t.Errorf("CapEff = %s, want none (capabilities drop ALL)", caps)
	}
	if nnp := procStatus(t, ctr, "NoNewPrivs"); nnp != "1" {
		t.Errorf("NoNewPrivs = %s (allowPrivilegeEscalation: false)", nnp)
	}
	if ro := inspect(t, ctr, "{{.HostConfig.ReadonlyRootfs}}"); ro != "true" {
		t.Errorf("ReadonlyRootfs = %s (readOnlyRootFilesystem: true)", ro)
	}
	for _, p := range probes {
		if code := status(admin + p); code != 200 {
			t.Errorf("probe %s: status %d, want 200", p, code)
		}
	}

	// What the kubelet does at the end of a pod's life: SIGTERM, and the
	// readiness probe fails while the pod drains (MCPD_SHUTDOWN_DELAY=5s).
	// The pod's containers restart (a Deployment's restartPolicy is
	// Always), so `podman wait` may miss the exit: read it from the died
	// event instead.
	killed := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	if _, err := podman(ctx, "kill", "--signal", "TERM", ctr); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * time.Second)
	for status(admin+"/readyz") != 503 {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 503 while draining")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := status(admin + "/healthz"); code != 200 {
		t.Errorf("/healthz while draining: %d, want 200 (draining is not dead)", code)
	}
	code := ""
	for deadline := time.Now().Add(60 * time.Second); code == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the container did not exit within 60s of SIGTERM")
		}
		out, err := podman(ctx, "events", "--stream=false", "--since", killed, "--filter", "container="+ctr, "--filter", "event=died", "--format", "{{.ContainerExitCode}}")
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Fields(out); len(lines) > 0 {
			code = lines[0]
		}
	}
	if code != "0" {
		t.Errorf("exit code %s after SIGTERM, want 0", code)
	}
}
