// Package deploytest tests mcpd's deployment files for real: the container
// image that deploy/build-image.sh builds (run with podman), the Kubernetes
// manifests in deploy/kubernetes (run with podman kube play) and the HAProxy
// config in deploy/haproxy (in front of three mcpd processes under load).
//
// The tests run only when MCPD_DEPLOY_TESTS=1, as .ci/run's deploy step
// sets it; the container and Kubernetes tests also need MCPD_TEST_IMAGE, the
// image to test. Each skips, saying what is missing, where podman, haproxy
// or the image is not there, unless MCPD_TEST_REQUIRE_DEPLOY=1: then it
// fails instead (.ci/run sets it where it can install the packages, so that
// CI cannot pass without having tested the deployment). The structural
// checks of the Kubernetes manifests and overlays need none of this and
// always run. See docs/operations.md.
package deploytest
