package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// kube-state-metrics, when given (-ksm), runs side by side with the
// exporter and the baseline: on the same objects and churn, in the same
// rounds. It exports no count of the events it processed; each write of
// the churn is one watch event to each program watching the object, so
// its events are the churn's writes (the two others' own counts match
// the writes when they keep up, see the per-run table).

const ksmName = "kube-state-metrics"

// ksmResource maps the benchmark's resources to kube-state-metrics'
// collectors (Widgets through its custom-resource-state collector).
var ksmResource = map[string]string{configMaps: "configmaps", secrets: "secrets", emptyResource: "leases"}

// ksmWidgets is kube-state-metrics' custom-resource-state configuration
// for the Widgets: one info series per object, the least it can export.
const ksmWidgets = `kind: CustomResourceStateMetrics
spec:
  resources:
    - groupVersionKind: {group: bench.rvsync.io, version: v1, kind: Widget}
      metrics:
        - name: info
          help: a Widget
          each:
            type: Info
            info:
              labelsFromPath:
                name: [metadata, name]
`

// ksmProgram runs kube-state-metrics at bin watching resources.
func ksmProgram(bin string, resources []string) *program {
	var collectors []string
	crs := false
	for _, r := range resources {
		if r == widgets {
			crs = true
			continue
		}
		collectors = append(collectors, ksmResource[r])
	}
	args := []string{"--resources", strings.Join(collectors, ",")}
	if crs {
		args = append(args, "--custom-resource-state-config", ksmWidgets)
	}
	return &program{name: ksmName, kind: ksmName, bin: bin, args: args}
}

// ksmAddresses returns the flags of kube-state-metrics' two listeners on
// free loopback ports, and its metrics URL.
func ksmAddresses() ([]string, string, error) {
	var ports [2]string
	for i := range ports {
		addr, err := freeAddress()
		if err != nil {
			return nil, "", err
		}
		_, ports[i], _ = net.SplitHostPort(addr)
	}
	return []string{"--host", "127.0.0.1", "--port", ports[0], "--telemetry-host", "127.0.0.1", "--telemetry-port", ports[1]},
		"http://127.0.0.1:" + ports[0] + "/metrics", nil
}

// ksmSeries names, per benchmark resource, the series kube-state-metrics
// exports once per object.
var ksmSeries = map[string]string{configMaps: "kube_configmap_created{", secrets: "kube_secret_created{", widgets: "kube_customresource_info{"}

// ksmSynced reports whether kube-state-metrics at url exports a series per
// object of each resource of want. It scrapes the whole exposition, so
// kube-state-metrics' CPU to sync includes these scrapes (one every 2s).
func ksmSynced(ctx context.Context, url string, want map[string]int) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, nil // not listening yet
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, nil
	}
	have := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for r, prefix := range ksmSeries {
			if strings.HasPrefix(line, prefix) {
				have[r]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	for r, n := range want {
		if _, counted := ksmSeries[r]; counted && have[r] < n {
			return false, nil
		}
	}
	return true, nil
}

// waitKSMSynced waits until kube-state-metrics exports every object.
func (r *running) waitKSMSynced(ctx context.Context, want map[string]int) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	for {
		ok, err := ksmSynced(ctx, r.metrics, want)
		if err != nil {
			return fmt.Errorf("%s: %w", ksmName, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not synced: %w", ksmName, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
