// Command operator-amconfig writes the Alertmanager configuration that the
// Prometheus Operator generates for an Alertmanager object: a base
// configuration (the alertmanager.yaml of its secret, such as
// kube-prometheus-stack's default) with the AlertmanagerConfig objects it
// selects merged in, by the operator's own code (pkg/alertmanager's
// ConfigBuilder and its AlertmanagerConfig validation, at the version this
// module pins). The chart's tests run the real Alertmanager with what it
// writes, so the operator's namespace matcher, its `continue: true` and its
// receiver names are part of what they test.
//
//	operator-amconfig -base kps.yaml -namespace monitoring -alertmanager-version 0.25.0 amc.yaml... > alertmanager.yaml
//
// The inputs are YAML streams (e.g. `helm template` output); objects of
// other kinds are skipped. Receivers may not reference Secrets (there is
// no cluster to read them from). Bad flags exit with code 2.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/blang/semver/v4"
	"github.com/prometheus-operator/prometheus-operator/pkg/alertmanager"
	validationv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/alertmanager/validation/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		var usage usageError
		fmt.Fprintf(os.Stderr, "operator-amconfig: %v\n", err)
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("operator-amconfig", flag.ContinueOnError)
	base := fs.String("base", "", "the base alertmanager.yaml (the Alertmanager's configuration secret), required")
	namespace := fs.String("namespace", "", "namespace of the Alertmanager object, required")
	version := fs.String("alertmanager-version", "0.25.0", "version of the Alertmanager that runs the configuration")
	strategy := fs.String("matcher-strategy", string(monitoringv1.OnNamespaceConfigMatcherStrategyType), "the Alertmanager object's alertmanagerConfigMatcherStrategy: OnNamespace (the default), OnNamespaceExceptForAlertmanagerNamespace or None")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *base == "" || *namespace == "" {
		return usageError{errors.New("-base and -namespace are required")}
	}
	amVersion, err := semver.ParseTolerant(*version)
	if err != nil {
		return usageError{fmt.Errorf("-alertmanager-version: %w", err)}
	}
	raw, err := os.ReadFile(*base)
	if err != nil {
		return err
	}
	amcs := map[string]*monitoringv1alpha1.AlertmanagerConfig{}
	for _, f := range fs.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := readConfigs(b, amcs); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Name: "alertmanager", Namespace: *namespace},
		Spec: monitoringv1.AlertmanagerSpec{
			AlertmanagerConfigMatcherStrategy: monitoringv1.AlertmanagerConfigMatcherStrategy{
				Type: monitoringv1.AlertmanagerConfigMatcherStrategyType(*strategy),
			},
		},
	}
	client := fake.NewClientset()
	store := assets.NewStoreBuilder(client.CoreV1(), client.CoreV1())
	cb := alertmanager.NewConfigBuilder(slog.New(slog.NewTextHandler(os.Stderr, nil)), amVersion, store, am)
	if err := cb.InitializeFromRawConfiguration(raw); err != nil {
		return fmt.Errorf("%s: %w", *base, err)
	}
	if err := cb.AddAlertmanagerConfigs(context.Background(), amcs); err != nil {
		return err
	}
	out, err := cb.MarshalJSON() // YAML, as the operator writes the generated secret
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// readConfigs adds the AlertmanagerConfig objects of a YAML stream to amcs,
// keyed as the operator keys them (namespace/name), each validated as the
// operator validates the objects it selects.
func readConfigs(b []byte, amcs map[string]*monitoringv1alpha1.AlertmanagerConfig) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var meta metav1.TypeMeta
		if len(doc) == 0 || string(doc) == "null" {
			continue
		}
		if err := json.Unmarshal(doc, &meta); err != nil {
			return err
		}
		if meta.Kind != monitoringv1alpha1.AlertmanagerConfigKind {
			continue
		}
		amc := new(monitoringv1alpha1.AlertmanagerConfig)
		strict := json.NewDecoder(bytes.NewReader(doc))
		strict.DisallowUnknownFields()
		if err := strict.Decode(amc); err != nil {
			return fmt.Errorf("AlertmanagerConfig: %w", err)
		}
		if err := validationv1alpha1.ValidateAlertmanagerConfig(amc); err != nil {
			return fmt.Errorf("AlertmanagerConfig %s/%s: %w", amc.Namespace, amc.Name, err)
		}
		amcs[amc.Namespace+"/"+amc.Name] = amc
	}
}
