package policy

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListCatalog: docs/egress.md's services table names every service
// of the catalog with every one of its domains.
func TestDocsListCatalog(t *testing.T) {
	b, err := os.ReadFile("../../docs/egress.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `") {
			cells := strings.Split(line, "|")
			if len(cells) >= 3 {
				rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[2]
			}
		}
	}
	for _, s := range Services() {
		row, ok := rows[s.Name]
		if !ok {
			t.Errorf("docs/egress.md: service %s missing from the catalog table", s.Name)
			continue
		}
		var got []string
		for _, d := range strings.Split(row, ",") {
			got = append(got, strings.TrimSpace(d))
		}
		if strings.Join(got, " ") != strings.Join(s.Domains, " ") {
			t.Errorf("docs/egress.md: service %s lists %v, catalog has %v", s.Name, got, s.Domains)
		}
	}
}
