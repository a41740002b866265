package task

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteSummary prints the record for a reader, as hobbs task show does:
// one field a line (an unset agent or playbook as "-"; finished, memories,
// review and a headless run's Claude Code figures only when set), then the
// body.
func (t *Task) WriteSummary(w io.Writer) error {
	fmt.Fprintf(w, "id:       %s\ntitle:    %s\nstatus:   %s\nagent:    %s\nplaybook: %s\nstarted:  %s\n",
		t.ID, t.Title, t.Status, orDash(t.Agent), orDash(t.Playbook), t.Started.Format(time.RFC3339))
	if t.Finished != nil {
		fmt.Fprintf(w, "finished: %s\n", t.Finished.Format(time.RFC3339))
	}
	if len(t.Remembered) > 0 {
		fmt.Fprintf(w, "memories: %s\n", strings.Join(t.Remembered, ", "))
	}
	if t.Review != "" {
		fmt.Fprintf(w, "review:   %s\n", t.Review)
	}
	if t.ClaudeResult != "" {
		fmt.Fprintf(w, "claude:   %s, %d turns, $%s\n", t.ClaudeResult, t.Turns, strconv.FormatFloat(t.CostUSD, 'f', -1, 64))
	}
	_, err := fmt.Fprint(w, t.Body)
	return err
}

// ListColumns is the header of hobbs task list, the columns of Row.
const ListColumns = "ID\tSTATUS\tSTARTED\tAGENT\tTITLE"

// Row is the task's line of hobbs task list, tab-separated: id, status,
// start in local time to the minute, agent ("-" for none), title.
func (t *Task) Row() string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", t.ID, t.Status, t.Started.Local().Format("2006-01-02 15:04"), orDash(t.Agent), t.Title)
}

// orDash is s, or "-" for a field left empty.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
