// Package e2e is the end-to-end suite: it proves the user's promise,
// "receive Alertmanager pages when informer caches fall behind", with every
// part real and on loopback.
//
// One control plane (etcd and kube-apiserver from the tool cache), a workload writing
// ConfigMaps and converging Deployments, the exporter configured and
// authorized as the Helm chart would (config and RBAC rendered from the
// chart's values, a process acting as the chart's ServiceAccount, its
// informers behind a fault proxy, its head probe and canary direct), a real
// Prometheus (Debian package `prometheus`) scraping it every second with the
// rule file of alerts.Render for a spec with scaled-down windows, and a real
// Alertmanager (Debian package `prometheus-alertmanager`) notifying a
// webhook receiver in the test, are shared by scenarios that run in order,
// the destructive ones last:
//
//  1. healthy: no page;
//  2. the informers' watch stalls in the proxy: RvsyncWatchStalled pages
//     with resource, severity, summary, runbook_url and dashboard_url, every
//     resource's page in one notification group of the page receiver (the
//     routing of docs/alertmanager.yaml: one incident, one page), and
//     resolves after the release;
//  3. etcd is paused (SIGSTOP): a staleness page; after SIGCONT everything
//     recovers in the same exporter;
//  4. kube-apiserver restarts: relists are counted, no RV regression;
//  5. etcd is restored from a snapshot taken in scenario 3: resource
//     versions go backwards and RvsyncResourceVersionRegression fires;
//  6. every panel query of the chart's dashboards returns data.
//
// TestEtcdLeaderChanges runs beside it on a stack of its own whose etcd has
// three members: an orderly leader move and an election, leader flapping,
// and the leader's member killed for 30s, each judged against the test's
// own measurement of the same quantities (see truth).
//
// TestFleet runs two such clusters, a and b, behind Thanos Query, configured
// with the chart's ci/multi-cluster-values.yaml: one Prometheus for a and
// two replicas for b, each with external_labels {cluster, replica}, the
// rules and a Thanos sidecar, one Query deduplicating on replica and one
// Alertmanager. Query counts every series once; a watch stalled in b pages
// once with cluster="b" while a stays silent; every dashboard query answers
// from Query for a, b and the whole fleet, whose overview ranks b's stalled
// resources first.
//
// TestCluster goes one step further, into a real single-node cluster
// (internal/testing/cluster): the chart is helm installed, loaded with 50,000
// objects, upgraded, sharded, scraped by a Prometheus configured as its
// ServiceMonitor describes (Kubernetes service discovery; Prometheus built
// from the Go module proxy, since Debian's lacks that discovery) and paged
// on a watch stalled by an HTTPS proxy in front of the API server
// (faultproxy.APIProxy), then uninstalled.
//
// Every test here but the judge's pure logic (truth_judge_test.go,
// truth_logic_test.go) is built only with the integration tag (go test
// -tags integration -run X ./e2e). On failure each scenario logs the
// webhook's notifications, Prometheus's alerts, the exporter's rvsync
// series and the tails of every process log.
package e2e
