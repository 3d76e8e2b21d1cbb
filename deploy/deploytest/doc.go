// Package deploytest tests mcpd's deployment files for real: the container
// image that deploy/build-image.sh builds (run with podman), the Kubernetes
// manifests in deploy/kubernetes (run with podman kube play) and the HAProxy
// config in deploy/haproxy (in front of three mcpd processes under load).
//
// The tests run only when MCPD_DEPLOY_TESTS=1, as .ci/run's deploy step
// sets it; the container and Kubernetes tests also need MCPD_TEST_IMAGE, the
// image to test. Each skips, saying what is missing, where podman, haproxy
// or the image is not there. See docs/operations.md.
package deploytest
