package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// These tests check the Kubernetes manifests and their overlays as
// documents, with no cluster: every file parses, the selectors of the
// Deployment, Service, PodDisruptionBudget, NetworkPolicy and topology
// spread agree, and the settings an operator relies on are there. With
// kubectl (or kustomize) installed they also build the base, every overlay
// and a second install, and check what comes out. They need neither
// MCPD_DEPLOY_TESTS nor podman.

const (
	baseDir     = "../kubernetes"
	overlaysDir = "../kubernetes-overlays"
)

// object is one Kubernetes object as parsed YAML.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }
func (o object) name() string { s, _ := dig(o, "metadata", "name").(string); return s }
func (o object) id() string   { return o.kind() + "/" + o.name() }

// dig walks maps by key and lists by int index; nil when a step is missing.
// (yaml.v3 decodes nested maps as object too.)
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := asMap(v)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case object:
		return m, true
	case map[string]any:
		return m, true
	}
	return nil, false
}

func labelsAt(v any, path ...any) map[string]string {
	out := map[string]string{}
	m, _ := asMap(dig(v, path...))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// parseObjects reads every document of a multi-document YAML stream.
func parseObjects(t *testing.T, name string, data []byte) []object {
	t.Helper()
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

// readKustomization parses a kustomization.yaml.
func readKustomization(t *testing.T, dir string) object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := parseObjects(t, dir, data)
	if len(objs) != 1 {
		t.Fatalf("%s/kustomization.yaml: %d documents", dir, len(objs))
	}
	return objs[0]
}

func strings_(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, s := range l {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// checkApp checks one install of mcpd: the objects a build (or the base's
// files) make.
func checkApp(t *testing.T, name string, objs []object) {
	t.Helper()
	// A companion an overlay adds (the redis overlay's Redis) is an app of
	// its own, with labels of its own: its overlay's case checks it.
	objs = slices.DeleteFunc(slices.Clone(objs), func(o object) bool {
		return labelsAt(o, "metadata", "labels")["app.kubernetes.io/component"] == "shared-state"
	})
	byID := map[string]object{}
	for _, o := range objs {
		if _, dup := byID[o.id()]; dup {
			t.Errorf("%s: %s twice", name, o.id())
		}
		byID[o.id()] = o
	}
	var dep object
	for _, o := range objs {
		if o.kind() == "Deployment" {
			dep = o
		}
	}
	if dep == nil {
		t.Fatalf("%s: no Deployment", name)
	}
	sel := labelsAt(dep, "spec", "selector", "matchLabels")
	if sel["app.kubernetes.io/name"] == "" || sel["app.kubernetes.io/instance"] == "" {
		t.Errorf("%s: the Deployment selects %v, want app.kubernetes.io/name and app.kubernetes.io/instance (two installs must not select each other's pods)", name, sel)
	}
	podLabels := labelsAt(dep, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("%s: the pod template's labels %v lack the selector's %s=%s", name, podLabels, k, v)
		}
	}
	for _, o := range objs {
		l := labelsAt(o, "metadata", "labels")
		for k, v := range sel {
			if l[k] != v {
				t.Errorf("%s: %s is labelled %v, want %s=%s like the rest", name, o.id(), l, k, v)
			}
		}
	}
	if r := dig(dep, "spec", "replicas"); r != nil {
		t.Errorf("%s: the Deployment sets replicas: %v; the HPA owns the count, and apply would reset it", name, r)
	}

	// Probes: startup, liveness, readiness, on a container port, and
	// readiness survives one slow answer.
	ctr := dig(dep, "spec", "template", "spec", "containers", 0)
	ports := map[string]int{}
	for _, p := range dig(ctr, "ports").([]any) {
		ports[fmt.Sprint(dig(p, "name"))] = dig(p, "containerPort").(int)
	}
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		port, _ := dig(ctr, probe, "httpGet", "port").(int)
		if port == 0 || port != ports["admin"] {
			t.Errorf("%s: %s on port %v, want the admin port %d", name, probe, dig(ctr, probe, "httpGet", "port"), ports["admin"])
		}
	}
	if ft, _ := dig(ctr, "readinessProbe", "failureThreshold").(int); ft < 2 {
		t.Errorf("%s: readinessProbe failureThreshold %v: one slow probe takes the pod out", name, dig(ctr, "readinessProbe", "failureThreshold"))
	}
	if ft, _ := dig(ctr, "startupProbe", "failureThreshold").(int); ft < 10 {
		t.Errorf("%s: startupProbe failureThreshold %v, want time for a slow start", name, ft)
	}
	spread, _ := dig(dep, "spec", "template", "spec", "topologySpreadConstraints").([]any)
	if len(spread) == 0 {
		t.Errorf("%s: no topologySpreadConstraints", name)
	}
	for i := range spread {
		if got := labelsAt(spread, i, "labelSelector", "matchLabels"); !maps.Equal(got, sel) {
			t.Errorf("%s: topology spread %d selects %v, the Deployment %v", name, i, got, sel)
		}
	}
	env := map[string]string{}
	for _, e := range dig(ctr, "env").([]any) {
		env[fmt.Sprint(dig(e, "name"))] = fmt.Sprint(dig(e, "value"))
	}
	for _, v := range dig(dep, "spec", "template", "spec", "volumes").([]any) {
		if cm, ok := dig(v, "configMap", "name").(string); ok {
			if _, ok := byID["ConfigMap/"+cm]; !ok {
				t.Errorf("%s: the Deployment mounts ConfigMap %s, which is not there", name, cm)
			}
		}
	}

	services := 0
	for _, o := range objs {
		switch o.kind() {
		case "Service":
			services++
			if got := labelsAt(o, "spec", "selector"); !maps.Equal(got, sel) {
				t.Errorf("%s: %s selects %v, the Deployment %v", name, o.id(), got, sel)
			}
			for _, p := range dig(o, "spec", "ports").([]any) {
				if tp := fmt.Sprint(dig(p, "targetPort")); ports[tp] == 0 || tp == "admin" {
					t.Errorf("%s: %s targets port %s, want the MCP port", name, o.id(), tp)
				}
			}
		case "PodDisruptionBudget":
			if got := labelsAt(o, "spec", "selector", "matchLabels"); !maps.Equal(got, sel) {
				t.Errorf("%s: %s selects %v, the Deployment %v", name, o.id(), got, sel)
			}
		case "HorizontalPodAutoscaler":
			if dig(o, "spec", "scaleTargetRef", "kind") != "Deployment" || dig(o, "spec", "scaleTargetRef", "name") != dep.name() {
				t.Errorf("%s: %s scales %v, want Deployment %s", name, o.id(), dig(o, "spec", "scaleTargetRef"), dep.name())
			}
			if m, _ := dig(o, "spec", "minReplicas").(int); m < 2 {
				t.Errorf("%s: minReplicas %v, want 2 or more (the PDB lets one go)", name, m)
			}
		case "NetworkPolicy":
			if got := labelsAt(o, "spec", "podSelector", "matchLabels"); !maps.Equal(got, sel) {
				t.Errorf("%s: %s selects %v, the Deployment %v", name, o.id(), got, sel)
			}
			rules, _ := dig(o, "spec", "ingress").([]any)
			open := map[int]bool{}
			for i, r := range rules {
				from, _ := dig(r, "from").([]any)
				if len(from) == 0 {
					t.Errorf("%s: %s ingress rule %d admits every source", name, o.id(), i)
				}
				rp, _ := dig(r, "ports").([]any)
				if len(rp) == 0 {
					t.Errorf("%s: %s ingress rule %d admits every port", name, o.id(), i)
				}
				for _, p := range rp {
					port, _ := dig(p, "port").(int)
					open[port] = true
				}
			}
			if !open[ports["http"]] || !open[ports["admin"]] {
				t.Errorf("%s: %s opens ports %v, want the MCP (%d) and admin (%d) ports to their clients", name, o.id(), open, ports["http"], ports["admin"])
			}
		case "Ingress":
			for _, r := range dig(o, "spec", "rules").([]any) {
				for _, p := range dig(r, "http", "paths").([]any) {
					if svc := fmt.Sprint(dig(p, "backend", "service", "name")); byID["Service/"+svc] == nil {
						t.Errorf("%s: %s routes to Service %s, which is not there", name, o.id(), svc)
					}
				}
				if h := fmt.Sprint(dig(r, "host")); env["MCPD_ALLOWED_HOST"] != h {
					t.Errorf("%s: %s serves host %s, the Deployment admits MCPD_ALLOWED_HOST=%s", name, o.id(), h, env["MCPD_ALLOWED_HOST"])
				}
			}
		case "HTTPRoute":
			for _, r := range dig(o, "spec", "rules").([]any) {
				for _, b := range dig(r, "backendRefs").([]any) {
					if svc := fmt.Sprint(dig(b, "name")); byID["Service/"+svc] == nil {
						t.Errorf("%s: %s routes to Service %s, which is not there", name, o.id(), svc)
					}
				}
			}
			for _, h := range strings_(dig(o, "spec", "hostnames")) {
				if env["MCPD_ALLOWED_HOST"] != h {
					t.Errorf("%s: %s serves host %s, the Deployment admits MCPD_ALLOWED_HOST=%s", name, o.id(), h, env["MCPD_ALLOWED_HOST"])
				}
			}
		}
	}
	if services != 1 {
		t.Errorf("%s: %d Services, want 1", name, services)
	}
}

// The base's files as they are (what podman kube play and kubectl apply -f
// read): every YAML file parses, kustomization.yaml lists each one, and the
// objects agree.
func TestKubeManifestsAgree(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(baseDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	var listed []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, parseObjects(t, f, data)...)
		listed = append(listed, filepath.Base(f))
	}
	if res := strings_(readKustomization(t, baseDir)["resources"]); !slices.Equal(slices.Sorted(slices.Values(res)), listed) {
		t.Errorf("kustomization.yaml lists %v, the directory has %v", res, listed)
	}
	checkApp(t, "base files", objs)
}

// overlayDirs are the overlays in deploy/kubernetes-overlays (not the
// components they use).
func overlayDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(overlaysDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "components" {
			dirs = append(dirs, filepath.Join(overlaysDir, e.Name()))
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no overlays")
	}
	return dirs
}

// Without kustomize: every overlay's and component's files exist and
// parse, overlays build on the base, and each patch targets an object the
// base has.
func TestKubeOverlaysRefer(t *testing.T) {
	base := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(baseDir, "*.yaml"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, o := range parseObjects(t, f, data) {
			base[o.id()] = true
		}
	}
	dirs := append(overlayDirs(t), filepath.Join(overlaysDir, "components", "api-key"))
	for _, dir := range dirs {
		k := readKustomization(t, dir)
		for _, r := range strings_(k["resources"]) {
			p := filepath.Join(dir, r)
			if fi, err := os.Stat(p); err != nil {
				t.Errorf("%s: resource %s: %v", dir, r, err)
			} else if !fi.IsDir() {
				data, _ := os.ReadFile(p)
				parseObjects(t, p, data)
			}
		}
		if k.kind() == "Kustomization" && !slices.Contains(strings_(k["resources"]), "../../kubernetes") {
			t.Errorf("%s: does not build on ../../kubernetes", dir)
		}
		for _, c := range strings_(k["components"]) {
			if _, err := os.Stat(filepath.Join(dir, c, "kustomization.yaml")); err != nil {
				t.Errorf("%s: component %s: %v", dir, c, err)
			}
		}
		patches, _ := k["patches"].([]any)
		for i, p := range patches {
			id := fmt.Sprint(dig(p, "target", "kind")) + "/" + fmt.Sprint(dig(p, "target", "name"))
			if !base[id] {
				t.Errorf("%s: patch %d targets %s, which the base does not have", dir, i, id)
			}
			var ops []any
			if err := yaml.Unmarshal([]byte(fmt.Sprint(dig(p, "patch"))), &ops); err != nil || len(ops) == 0 {
				t.Errorf("%s: patch %d is no JSON patch: %v", dir, i, err)
			}
		}
	}
}

// kustomize is a command that builds a kustomization: kustomize build, or
// kubectl kustomize; nil when neither is installed.
func kustomize() []string {
	if p, err := exec.LookPath("kustomize"); err == nil {
		return []string{p, "build"}
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return []string{p, "kustomize"}
	}
	return nil
}

func build(t *testing.T, dir string) []object {
	t.Helper()
	k := kustomize()
	out, err := exec.Command(k[0], append(k[1:], dir)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("%s %s: %v", strings.Join(k, " "), dir, err)
	}
	return parseObjects(t, dir, out)
}

func find(objs []object, id string) object {
	for _, o := range objs {
		if o.id() == id {
			return o
		}
	}
	return nil
}

// The base and every overlay, built with kustomize: each is one consistent
// install; the ingress and gateway overlays authenticate with the key from
// the Secret, admit only their host and let their proxies in; the HPA
// overlay scales on calls in flight. A second install beside the first
// (another name prefix and instance label) shares no object and selects
// none of the first's pods.
func TestKubeOverlaysBuild(t *testing.T) {
	if kustomize() == nil {
		skipOrFail(t, "neither kustomize nor kubectl is installed: the overlays are checked without building them (TestKubeOverlaysRefer)")
	}
	baseObjs := build(t, baseDir)
	checkApp(t, "base", baseObjs)
	for _, dir := range overlayDirs(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			objs := build(t, dir)
			checkApp(t, name, objs)
			dep := find(objs, "Deployment/mcpd")
			ctr := dig(dep, "spec", "template", "spec", "containers", 0)
			env := map[string]string{}
			for _, e := range dig(ctr, "env").([]any) {
				env[fmt.Sprint(dig(e, "name"))] = fmt.Sprint(dig(e, "value"))
			}
			switch name {
			case "ingress", "gateway":
				if env["MCPD_INSECURE_NO_AUTH"] != "0" || env["MCPD_ALLOWED_HOST"] == "*" {
					t.Errorf("env %v: want MCPD_INSECURE_NO_AUTH=0 and a named MCPD_ALLOWED_HOST", env)
				}
				auth, _ := dig(find(objs, "ConfigMap/mcpd-config"), "data", "auth.hcl").(string)
				if !strings.Contains(auth, `file("/run/secrets/mcpd/api-key")`) {
					t.Errorf("the config has no auth block reading the Secret's key: %q", auth)
				}
				mounted := false
				for _, m := range dig(ctr, "volumeMounts").([]any) {
					mounted = mounted || dig(m, "mountPath") == "/run/secrets/mcpd"
				}
				if !mounted {
					t.Error("the Secret is not mounted at /run/secrets/mcpd")
				}
				from, _ := dig(find(objs, "NetworkPolicy/mcpd"), "spec", "ingress", 0, "from").([]any)
				if len(from) < 2 {
					t.Errorf("the MCP port admits %v, want the proxies' namespace too", from)
				}
			case "redis":
				checkRedisOverlay(t, objs, ctr)
			case "in-flight-hpa":
				if got := dig(find(objs, "HorizontalPodAutoscaler/mcpd"), "spec", "metrics", 0, "pods", "metric", "name"); got != "mcpd_tool_calls_in_flight" {
					t.Errorf("the HPA's first metric is %v, want mcpd_tool_calls_in_flight", got)
				}
			default:
				t.Errorf("overlay %s has no checks of its own here", name)
			}
		})
	}

	t.Run("second install", func(t *testing.T) {
		dir := t.TempDir()
		abs, err := filepath.Abs(baseDir)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: second-
resources:
  - %s
labels:
  - pairs:
      app.kubernetes.io/instance: second
    includeSelectors: true
`, rel)
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
		second := build(t, dir)
		checkApp(t, "second install", second)
		for _, o := range second {
			if find(baseObjs, o.id()) != nil {
				t.Errorf("%s is in both installs", o.id())
			}
		}
		firstPods := labelsAt(find(baseObjs, "Deployment/mcpd"), "spec", "template", "metadata", "labels")
		for _, o := range second {
			for _, path := range [][]any{{"spec", "selector", "matchLabels"}, {"spec", "selector"}, {"spec", "podSelector", "matchLabels"}} {
				sel := labelsAt(o, path...)
				if len(sel) == 0 || o.kind() == "Deployment" && len(path) == 2 {
					continue
				}
				selects := true
				for k, v := range sel {
					selects = selects && firstPods[k] == v
				}
				if selects {
					t.Errorf("the second install's %s selects the first install's pods (%v)", o.id(), sel)
				}
			}
		}
		if got := dig(find(second, "HorizontalPodAutoscaler/second-mcpd"), "spec", "scaleTargetRef", "name"); got != "second-mcpd" {
			t.Errorf("the second HPA scales %v", got)
		}
	})
}

// checkRedisOverlay checks the redis overlay: mcpd's pods get the Redis
// URL and the password from the mcpd-redis Secret; the config has the
// state block; the Redis Service selects the Redis pod and nothing of
// mcpd's (nor mcpd's Service the Redis pod); its NetworkPolicy admits
// mcpd's pods only, on the Redis port.
func checkRedisOverlay(t *testing.T, objs []object, ctr any) {
	t.Helper()
	env := map[string]any{}
	for _, e := range dig(ctr, "env").([]any) {
		env[fmt.Sprint(dig(e, "name"))] = e
	}
	if got := dig(env["MCPD_REDIS_URL"], "value"); got != "redis://mcpd-redis:6379" {
		t.Errorf("MCPD_REDIS_URL = %v, want redis://mcpd-redis:6379", got)
	}
	if got := dig(env["MCPD_REDIS_PASSWORD"], "valueFrom", "secretKeyRef", "name"); got != "mcpd-redis" {
		t.Errorf("MCPD_REDIS_PASSWORD comes from %v, want the mcpd-redis Secret", got)
	}
	tools, _ := dig(find(objs, "ConfigMap/mcpd-config"), "data", "tools.hcl").(string)
	if !strings.Contains(tools, "state {") || !strings.Contains(tools, `env("MCPD_REDIS_URL")`) {
		t.Errorf("the config has no state block reading MCPD_REDIS_URL:\n%s", tools)
	}
	redisDep, redisSvc, policy := find(objs, "Deployment/mcpd-redis"), find(objs, "Service/mcpd-redis"), find(objs, "NetworkPolicy/mcpd-redis")
	if redisDep == nil || redisSvc == nil || policy == nil {
		t.Fatalf("want Deployment, Service and NetworkPolicy mcpd-redis; have %v %v %v", redisDep != nil, redisSvc != nil, policy != nil)
	}
	redisPods := labelsAt(redisDep, "spec", "template", "metadata", "labels")
	mcpdPods := labelsAt(find(objs, "Deployment/mcpd"), "spec", "template", "metadata", "labels")
	selects := func(sel, pods map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if pods[k] != v {
				return false
			}
		}
		return true
	}
	if sel := labelsAt(redisSvc, "spec", "selector"); !selects(sel, redisPods) || selects(sel, mcpdPods) {
		t.Errorf("Service mcpd-redis selects %v: want the Redis pod %v and not mcpd's %v", sel, redisPods, mcpdPods)
	}
	for _, o := range objs {
		if o.kind() == "Service" && o.id() != "Service/mcpd-redis" && selects(labelsAt(o, "spec", "selector"), redisPods) {
			t.Errorf("%s selects the Redis pod", o.id())
		}
	}
	if sel := labelsAt(policy, "spec", "podSelector", "matchLabels"); !selects(sel, redisPods) {
		t.Errorf("NetworkPolicy mcpd-redis applies to %v, not the Redis pod", sel)
	}
	rules, _ := dig(policy, "spec", "ingress").([]any)
	if len(rules) == 0 {
		t.Fatal("NetworkPolicy mcpd-redis has no ingress rule: it would admit nobody, mcpd included")
	}
	for i, r := range rules {
		from, _ := dig(r, "from").([]any)
		if len(from) == 0 {
			t.Errorf("rule %d admits every source", i)
		}
		for _, f := range from {
			if dig(f, "namespaceSelector") != nil || dig(f, "ipBlock") != nil || !selects(labelsAt(f, "podSelector", "matchLabels"), mcpdPods) {
				t.Errorf("rule %d admits %v, want mcpd's pods only", i, f)
			}
		}
		if port := dig(r, "ports", 0, "port"); port != 6379 {
			t.Errorf("rule %d opens port %v, want 6379", i, port)
		}
	}
}
