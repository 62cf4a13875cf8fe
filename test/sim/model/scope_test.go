package model

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A label-selected list and watch hold the objects of their selector only,
// as kube-apiserver's do: the list's items and the watch's events carry
// the label, and the other half of the objects never reaches the client. A
// selector the model does not serve is refused (400), never served whole.
func TestALabelSelectedListAndWatchHoldTheirHalf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, client := configMapsCluster(3)
		want := map[string]bool{}
		create := func(from, to int) {
			c.Do(func(tx *Tx) {
				for i := from; i < to; i++ {
					name := fmt.Sprintf("o%d", i)
					tx.Create("configmaps", "ns", name, nil)
					if Shard("ns/"+name) == "a" {
						want["ns/"+name] = true
					}
				}
			})
		}
		create(0, 20)
		get := func(query string) (int, []byte) {
			resp, err := client.Get("https://informers/api/v1/configmaps?" + query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		code, body := get("labelSelector=shard%3Da")
		var list struct {
			Metadata struct{ ResourceVersion string }
			Items    []struct{ Metadata jsonMeta }
		}
		if err := json.Unmarshal(body, &list); code != 200 || err != nil {
			t.Fatalf("list: %d %v", code, err)
		}
		got := map[string]bool{}
		for _, it := range list.Items {
			if it.Metadata.Labels[ShardLabel] != "a" {
				t.Errorf("listed %s/%s labelled %v", it.Metadata.Namespace, it.Metadata.Name, it.Metadata.Labels)
			}
			got[it.Metadata.Namespace+"/"+it.Metadata.Name] = true
		}
		if len(want) == 0 || len(want) == 20 || len(got) != len(want) {
			t.Fatalf("listed %d objects of shard a, want %d of 20", len(got), len(want))
		}

		resp, err := client.Get("https://informers/api/v1/configmaps?watch=true&allowWatchBookmarks=false&labelSelector=shard%3Da&resourceVersion=" + list.Metadata.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan string, 64)
		go func() {
			defer close(events)
			dec := json.NewDecoder(resp.Body)
			for {
				var ev struct {
					Object struct{ Metadata jsonMeta }
				}
				if dec.Decode(&ev) != nil {
					return
				}
				events <- ev.Object.Metadata.Namespace + "/" + ev.Object.Metadata.Name
			}
		}()
		synctest.Wait()
		before := len(want)
		create(20, 40)
		time.Sleep(time.Second)
		synctest.Wait()
		resp.Body.Close()
		var watched []string
		for k := range events {
			watched = append(watched, k)
		}
		if len(watched) != len(want)-before {
			t.Errorf("watched %d events, want the %d writes of shard a: %v", len(watched), len(want)-before, watched)
		}
		for _, k := range watched {
			if !want[k] {
				t.Errorf("watched %s, of shard b", k)
			}
		}

		if code, body := get("labelSelector=app%3Dx"); code != 400 || !strings.Contains(string(body), "shard=a") {
			t.Errorf("a selector the model does not serve: %d %s, want 400 naming the ones it does", code, body)
		}
		c.Close()
	})
}
