package testenv

import (
	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/exporterproc"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/workload"
)

// The launcher's names, so that tests keep one import: testenv is the thin
// testing layer over the packages that start things (process,
// controlplane, workload, scrape, exporterproc), as controller-runtime's
// envtest is over its controlplane package. Commands import those packages
// directly and never link testing.

// Process is process.Process.
type Process = process.Process

// ErrExited is process.ErrExited.
var ErrExited = process.ErrExited

var (
	FindProcess = process.FindProcess
	Naming      = process.Naming
	Poll        = process.Poll
	GetOK       = process.GetOK
	FreeAddr    = process.FreeAddr
	Binary      = process.Binary
	RepoRoot    = process.RepoRoot
	Tail        = process.Tail
	LastLines   = process.LastLines
	LineDiff    = process.LineDiff
)

// Metrics is scrape.Metrics.
type Metrics = scrape.Metrics

var (
	Scrape          = scrape.Scrape
	Gather          = scrape.Gather
	CountBelow      = scrape.CountBelow
	Quantile        = scrape.Quantile
	EnsureNamespace = workload.EnsureNamespace
	WriteConfigMaps = workload.WriteConfigMaps
	Churn           = workload.Churn
	NewDeployment   = workload.NewDeployment
	// ChurnDeployments is workload.ChurnDeployments.
	ChurnDeployments = workload.ChurnDeployments
	// ChurnEvents is workload.ChurnEvents.
	ChurnEvents = workload.ChurnEvents
)

// Names of the control-plane and exporter launchers.
type (
	Options         = controlplane.Options
	EtcdCluster     = controlplane.EtcdCluster
	EtcdMember      = controlplane.EtcdMember
	Processes       = controlplane.Processes
	HA              = controlplane.HA
	APIServer       = controlplane.APIServer
	Exporter        = exporterproc.Exporter
	ExporterOptions = exporterproc.ExporterOptions
)

var (
	Binaries        = controlplane.Binaries
	WriteKubeconfig = controlplane.WriteKubeconfig
	AuditLog        = controlplane.AuditLog
	ExporterBinary  = exporterproc.ExporterBinary
	StartExporter   = exporterproc.StartExporter
	CheckConfig     = exporterproc.CheckConfig
	ConfigResources = exporterproc.ConfigResources
)

// Environment variables naming the control-plane binaries.
const (
	EnvKubeAPIServer = controlplane.EnvKubeAPIServer
	EnvEtcd          = controlplane.EnvEtcd
)
