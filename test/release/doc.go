// Package release holds the release suite: it reads the artifacts of a
// release build (`make release-dry-run` writes them into dist/) through the
// rig internal/testing/release, as a user's tools would, and checks each
// image, the OCI index, the chart, the SBOMs and the checksums. It is built
// only with the integration tag.
package release
