//go:build integration

package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/exporter/config"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
	"github.com/rvsync-slo/rvsync-slo/pkg/probe"
)

// Watching Secrets never brings their data into the exporter: a marker
// written into a Secret's data appears in no scrape, no log line (at debug
// level) and no object of an informer store.
func TestSecretDataNeverEntersTheExporter(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	const marker = "rvsync-marker-5f0c2e9b"
	if err := testenv.EnsureNamespace(ctx, env.Client, "secrets"); err != nil {
		t.Fatal(err)
	}

	var logs lockedBuffer
	cfg := config.Config{Resources: resources("secrets"), LogLevel: "debug"}
	cfg.Canary.Enabled = new(false)
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.ProbeInterval.Duration = time.Second
	e, err := newExporter(options{Config: cfg, InformerConfig: env.Config,
		Logger: logr.FromSlogHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.Level(-10)}))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.run(runCtx) }()
	defer func() { cancel(); <-done }()
	r := &running{exporter: e, url: "http://" + e.addr() + "/metrics"}
	r.waitSynced(t, "secrets")

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "secrets"},
		StringData: map[string]string{"password": marker}}
	if _, err := env.Client.CoreV1().Secrets("secrets").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitMetric(t, time.Minute, "the secret counted", func(m testenv.Metrics) bool {
		v, _ := m.Value(catalog.Objects.Name, res("secrets"))
		return v >= 1
	})
	resp, err := http.Get(r.url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), marker) {
		t.Error("the secret's data appears in /metrics")
	}
	if strings.Contains(logs.String(), marker) {
		t.Error("the secret's data appears in the logs")
	}

	// The informer the exporter uses, built the same way: its store holds
	// nothing with the data.
	mon := probe.New(probe.Options{})
	inf, err := mon.NewInformer(env.Config, probe.Resource{GVR: corev1.SchemeGroupVersion.WithResource("secrets")})
	if err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(runCtx)
	testenv.WaitFor(t, time.Minute, "the informer synced", func() (bool, error) { return inf.HasSynced(), nil })
	items := inf.GetStore().List()
	if len(items) == 0 {
		t.Fatal("the informer store is empty")
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) || bytes.Contains(b, []byte(`"data"`)) {
			t.Errorf("informer store holds data: %s", b)
		}
	}
}
