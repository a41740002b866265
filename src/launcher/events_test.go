package launcher

import (
	"errors"
	"testing"
)

func TestParseEvent(t *testing.T) {
	for _, c := range []struct {
		line string
		want event
		ok   bool
	}{
		// Docker Engine 20.10, `docker events --format '{{json .}}'`.
		{`{"status":"die","id":"4f2a9c","from":"hobbs:local","Type":"container","Action":"die","Actor":{"ID":"4f2a9c","Attributes":{"exitCode":"3","name":"hobbs-abc123"}},"scope":"local","time":1,"timeNano":1}`,
			event{died: true, id: "4f2a9c"}, true},
		{`{"Type":"network","Action":"connect","Actor":{"ID":"77aa","Attributes":{"container":"81acbb","name":"hobbs-abc123-egress","type":"bridge"}},"scope":"local","time":1,"timeNano":1}`,
			event{}, false},
		// A network's "die" does not exist, but an exec_die must not count.
		{`{"status":"exec_die","id":"4f2a9c","Type":"container","Action":"exec_die","Actor":{"ID":"4f2a9c"}}`, event{}, false},
		{`{"Type":"network","Action":"disconnect","Actor":{"ID":"77aa","Attributes":{"container":"81acbb"}}}`, event{}, false},
		// podman: ID and Status at the top, "died".
		{`{"ID":"4f2a9cdeadbeef","Image":"hobbs:local","Name":"hobbs-abc123","Status":"died","Type":"container","ContainerExitCode":0}`,
			event{died: true, id: "4f2a9cdeadbeef"}, true},
		// Removal (the agent is created with --rm): Docker's destroy,
		// podman's remove. A network's destroy is not a container's.
		{`{"status":"destroy","id":"4f2a9c","Type":"container","Action":"destroy","Actor":{"ID":"4f2a9c","Attributes":{"name":"hobbs-abc123"}},"scope":"local","time":1,"timeNano":1}`,
			event{removed: true, id: "4f2a9c"}, true},
		{`{"ID":"4f2a9cdeadbeef","Name":"hobbs-abc123","Status":"remove","Type":"container"}`,
			event{removed: true, id: "4f2a9cdeadbeef"}, true},
		{`{"Type":"network","Action":"destroy","Actor":{"ID":"77aa","Attributes":{"name":"hobbs-abc123-int"}}}`, event{}, false},
		{`not json`, event{}, false},
	} {
		got, ok := parseEvent([]byte(c.line))
		if ok != c.ok || got != c.want {
			t.Errorf("parseEvent(%s) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

func TestSameID(t *testing.T) {
	if !sameID("4f2a9cdeadbeef", "4f2a9c") || !sameID("4f2a9c", "4f2a9cdeadbeef") {
		t.Errorf("an abbreviated id must match its full form")
	}
	if sameID("", "4f2a9c") || sameID("4f2a9c", "") || sameID("4f2a9c", "81acbb") {
		t.Errorf("empty or different ids must not match")
	}
}

func TestIsClash(t *testing.T) {
	for msg, want := range map[string]bool{
		`docker create: Error response from daemon: Conflict. The container name "/x" is already in use by container "abc".`: true,
		`docker network create: Error response from daemon: network with name x-int already exists`:                          true,
		`podman create: error creating container storage: the container name "x" is already in use by abc`:                   true,
		`docker create: Error response from daemon: invalid mount config`:                                                    false,
	} {
		if got := isClash(errors.New(msg)); got != want {
			t.Errorf("isClash(%q) = %v, want %v", msg, got, want)
		}
	}
}
