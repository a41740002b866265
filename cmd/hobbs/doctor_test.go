package main

import (
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func TestWriteDoctorRows(t *testing.T) {
	var sb strings.Builder
	rows := doctorRows([]doctor.Result{
		{Check: "instance.layout", Status: doctor.OK, Message: "complete", Advice: errs.NewAdvice(doctor.LayoutIncomplete)},
		{Check: "instance.permissions", Status: doctor.Fail, Message: "vault/keys is 0755, must be 0700",
			Advice: errs.NewAdvice(doctor.ModeTooOpen, "mode", "0700", "path", "vault/keys")},
		{Check: "engine", Status: doctor.Warn, Message: "podman"},
	}, instance.Instance{})
	err := writeDoctorRows(&sb, rows)
	want := "ok    instance.layout        complete\n" +
		"fail  instance.permissions   vault/keys is 0755, must be 0700\n" +
		"                             fix: chmod 0700 vault/keys\n" +
		"warn  engine                 podman\n"
	if err != nil || sb.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
}

// The report's checks have distinct names: a result is found by its
// check's name (scenarios, --json readers).
func TestDoctorCheckNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range doctorChecks {
		if c.Name == "" || c.Run == nil || seen[c.Name] {
			t.Errorf("check %q: empty, without a function, or twice", c.Name)
		}
		seen[c.Name] = true
	}
}
