// Command rvsync-baseline is the comparison point of the benchmarks: a plain
// client-go metadata informer, as a controller would start it from a
// metadatainformer factory, watching the same resources as the exporter and
// doing nothing else. It is not instrumented; one event handler counts the
// events it processed so that the benchmark can report events per second.
//
// It prints "synced objects=N" once every informer has synced, "events=N"
// on SIGUSR1 and "events=N objects=N" on exit (SIGTERM or SIGINT).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config)")
	resources := flag.String("resources", "configmaps", "comma-separated resources to watch, as plural.group (core: plural)")
	flag.Parse()
	if err := run(*kubeconfig, strings.Split(*resources, ",")); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-baseline: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, resources []string) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := metadatainformer.NewSharedInformerFactory(client, 0)
	var events atomic.Int64
	var informers []cache.SharedIndexInformer
	for _, name := range resources {
		gvr, err := mapper.ResourceFor(schema.ParseGroupResource(strings.TrimSpace(name)).WithVersion(""))
		if err != nil {
			return fmt.Errorf("resource %q: %w", name, err)
		}
		inf := factory.ForResource(gvr).Informer()
		count := func() { events.Add(1) }
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					count()
				}
			},
			UpdateFunc: func(any, any) { count() },
			DeleteFunc: func(any) { count() },
		})
		informers = append(informers, inf)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	factory.Start(ctx.Done())
	objects := func() int {
		n := 0
		for _, inf := range informers {
			n += len(inf.GetStore().ListKeys())
		}
		return n
	}
	for _, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return ctx.Err()
		}
	}
	fmt.Printf("synced objects=%d\n", objects())
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	for {
		select {
		case <-usr1:
			fmt.Printf("events=%d\n", events.Load())
		case <-ctx.Done():
			factory.Shutdown()
			fmt.Printf("events=%d objects=%d\n", events.Load(), objects())
			return nil
		}
	}
}
