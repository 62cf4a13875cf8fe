// Command rvsync-cluster (`make cluster`) starts a real single-node
// cluster on this machine (internal/testing/cluster), installs the chart into it
// with the exporter image built from this checkout, prints how to reach it
// with kubectl, and on Ctrl-C stops the cluster and undoes every change it
// made to the host.
//
// Bad flags exit with code 2 and one line naming the problem.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/cluster"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

type options struct {
	release, namespace string
	valuesFiles        []string
	install            bool
	kubectl            string
	logDir             string
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-cluster: %v\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-cluster: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("rvsync-cluster", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	var values string
	fs.StringVar(&o.release, "release", "rvsync-slo", "helm release name of the chart")
	fs.StringVar(&o.namespace, "namespace", "rvsync", "namespace of the release (enforces the restricted Pod Security Standard)")
	fs.StringVar(&values, "values", "", "comma-separated values files passed to helm install after the image settings")
	fs.BoolVar(&o.install, "install", true, "install the chart; false starts the cluster only")
	fs.StringVar(&o.kubectl, "kubectl", "kubectl", "kubectl binary named in the printed instructions (make cluster passes the one it built)")
	fs.StringVar(&o.logDir, "log-dir", "", "directory for the components' logs (default: a new directory under /tmp, kept after the stop)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: rvsync-cluster [flags]\n\nStarts a single-node cluster, installs the chart, waits for Ctrl-C.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%w (see -help)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only; see -help)", fs.Arg(0))
	}
	for f := range strings.SplitSeq(values, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return o, fmt.Errorf("-values: %v", err)
		}
		o.valuesFiles = append(o.valuesFiles, f)
	}
	if o.release == "" || o.namespace == "" {
		return o, errors.New("-release and -namespace must not be empty")
	}
	return o, nil
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Printf(">> "+format+"\n", args...) }
	if o.logDir == "" {
		if o.logDir, err = os.MkdirTemp("", "rvsync-cluster-logs-"); err != nil {
			return err
		}
	}
	imgDir, err := os.MkdirTemp("", "rvsync-cluster-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(imgDir)
	logf("building the exporter image %s", cluster.ExporterImage)
	image, err := cluster.BuildImage(ctx, imgDir, cluster.ExporterProgram, cluster.ExporterImage)
	if err != nil {
		return err
	}
	logf("starting the cluster (logs in %s)", o.logDir)
	c, err := cluster.Start(ctx, cluster.Options{Logf: logf, LogDir: o.logDir, Images: []string{image}})
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping the cluster and cleaning the host")
		err = errors.Join(err, c.Stop())
	}()
	if err := chart.InstallOperatorCRDs(ctx, c.Config); err != nil {
		return err
	}
	podIP := "<pod IP>"
	if o.install {
		if podIP, err = install(ctx, c, o, logf); err != nil {
			return err
		}
	}
	helm, _ := chart.Helm()
	fmt.Printf(`
The cluster is up (node %s at %s). In another shell:

  export KUBECONFIG=%s
  %s get nodes
  %s -n %s get pods -o wide
  curl -s http://%s:8080/metrics | grep rvsync_
  %s -n %s upgrade %s %s --reuse-values --set exporter.logLevel=debug

Images come from tarballs imported into containerd (ctr --address %s -n k8s.io images ls).
Ctrl-C stops the cluster and undoes every change to the host.
`, cluster.NodeName, c.NodeIP, c.Kubeconfig, o.kubectl, o.kubectl, o.namespace, podIP, helm, o.namespace, o.release, mustChartDir(), filepath.Join(c.Dir, "containerd.sock"))
	<-ctx.Done()
	return nil
}

// install installs the chart with the imported image into a namespace
// enforcing the restricted Pod Security Standard, waits for its pods and
// returns the IP of one.
func install(ctx context.Context, c *cluster.Cluster, o options, logf func(string, ...any)) (podIP string, err error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace, Labels: chart.RestrictedNamespaceLabels}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	repo, tag, _ := strings.Cut(cluster.ExporterImage, ":")
	logf("helm install %s into namespace %s", o.release, o.namespace)
	if err := chart.Install(chart.Options{
		Release: o.release, Namespace: o.namespace, Kubeconfig: c.Kubeconfig, ValuesFiles: o.valuesFiles,
		Values: map[string]any{"image": map[string]any{"registry": "", "repository": repo, "tag": tag}},
	}); err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	err = process.Poll(wctx, "the release's pods Ready", func(ctx context.Context) error {
		pods, err := c.Client.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + o.release})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return errors.New("no pods yet")
		}
		for _, p := range pods.Items {
			ready := false
			for _, cond := range p.Status.Conditions {
				ready = ready || (cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue)
			}
			if !ready {
				return fmt.Errorf("pod %s not Ready (%s)", p.Name, p.Status.Phase)
			}
		}
		for _, p := range pods.Items {
			logf("pod %s Ready at %s", p.Name, p.Status.PodIP)
			podIP = p.Status.PodIP
		}
		return nil
	})
	return podIP, err
}

func mustChartDir() string {
	d, err := chart.Dir()
	if err != nil {
		return "charts/rvsync-slo"
	}
	return d
}
