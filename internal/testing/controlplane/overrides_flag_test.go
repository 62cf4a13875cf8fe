package controlplane

import "testing"

// EtcdOverrides become kube-apiserver's --etcd-servers-overrides, in its
// syntax (kube-apiserver --help: "group/resource#servers", comma
// separated, the core group empty); a resource without its group's slash
// is refused before anything starts.
func TestOverridesFlag(t *testing.T) {
	for _, c := range []struct {
		resources []string
		want      string
		err       bool
	}{
		{[]string{"/events"}, "/events#http://127.0.0.1:1", false},
		{[]string{"/events", "coordination.k8s.io/leases"}, "/events#http://127.0.0.1:1,coordination.k8s.io/leases#http://127.0.0.1:1", false},
		{[]string{"events"}, "", true},
		{[]string{"/events#http://elsewhere"}, "", true},
	} {
		got, err := overridesFlag(c.resources, "http://127.0.0.1:1")
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%q: %q, %v; want %q, error %v", c.resources, got, err, c.want, c.err)
		}
	}
}
