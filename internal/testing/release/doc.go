// Package release finds the artifacts of a release build (`make
// release-dry-run` writes them into dist/, the release workflow publishes
// them) and reads them as a user's tools would: the image tarballs of
// each architecture (the docker-archive format that `ctr images import`
// and `docker load` read), the multi-arch image's OCI layout, the chart
// .tgz, the SPDX SBOMs and the checksums. Its test checks a build; the
// real-cluster test installs the chart .tgz with the image tarball of the
// host's architecture.
package release
