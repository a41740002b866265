package schedule

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// calendar is a parsed schedule in the subset of systemd's OnCalendar
// syntax that cron can express too: each field is the set of values it
// matches (nil: every value).
//
//	[WEEKDAYS] [DATE] TIME    WEEKDAYS: Mon, Mon,Wed, Mon..Fri (English names, short or long)
//	                          DATE: *-*-*, *-MM-DD, *-*-DD, MM-DD (year must be *)
//	                          TIME: HH:MM or HH:MM:00; each field *, N, N,M, N..M, N/STEP or */STEP
//	hourly, daily, weekly, monthly    systemd's shorthands
type calendar struct {
	minute, hour, dom, month, dow []int // dow: 0 Sunday … 6 Saturday
}

var weekdays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6}

var shorthands = map[string]string{
	"hourly":  "*-*-* *:00:00",
	"daily":   "*-*-* 00:00:00",
	"weekly":  "Mon *-*-* 00:00:00",
	"monthly": "*-*-01 00:00:00",
}

// parseCalendar parses spec (see calendar). The error says what cron cannot
// express, or what is malformed.
func parseCalendar(spec string) (calendar, error) {
	var c calendar
	s := strings.TrimSpace(spec)
	if full, ok := shorthands[strings.ToLower(s)]; ok {
		s = full
	}
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 3 {
		return c, fmt.Errorf("%q: expected [WEEKDAYS] [DATE] HH:MM, e.g. \"Mon *-*-* 09:00\"", spec)
	}
	var err error
	i := 0
	if len(fields) > 1 && !strings.ContainsAny(fields[0], ":-0123456789*") {
		if c.dow, err = parseWeekdays(fields[0]); err != nil {
			return c, fmt.Errorf("%q: %v", spec, err)
		}
		i++
	}
	if i < len(fields)-1 {
		if err := c.parseDate(fields[i]); err != nil {
			return c, fmt.Errorf("%q: %v", spec, err)
		}
		i++
	}
	if i != len(fields)-1 {
		return c, fmt.Errorf("%q: expected [WEEKDAYS] [DATE] HH:MM (a time zone or a year is not supported)", spec)
	}
	if err := c.parseTime(fields[i]); err != nil {
		return c, fmt.Errorf("%q: %v", spec, err)
	}
	if c.dow != nil && (c.dom != nil) {
		return c, fmt.Errorf("%q: cron cannot combine weekdays with days of the month (it would run on either)", spec)
	}
	return c, nil
}

func parseWeekdays(s string) ([]int, error) {
	set := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, rng := strings.Cut(part, "..")
		a, ok := weekdays[strings.ToLower(lo)]
		if !ok {
			return nil, fmt.Errorf("unknown weekday %q (Mon, Tue, … or Monday, …)", lo)
		}
		b := a
		if rng {
			if b, ok = weekdays[strings.ToLower(hi)]; !ok {
				return nil, fmt.Errorf("unknown weekday %q", hi)
			}
		}
		for d := a; ; d = (d + 1) % 7 {
			set[d] = true
			if d == b {
				break
			}
		}
	}
	return setList(set, 7), nil
}

func (c *calendar) parseDate(s string) error {
	parts := strings.Split(s, "-")
	switch len(parts) {
	case 3:
		if parts[0] != "*" {
			return fmt.Errorf("a year (%q) cannot be expressed in cron; use * for the year", parts[0])
		}
		parts = parts[1:]
	case 2:
	default:
		return fmt.Errorf("date %q: expected *-MM-DD or MM-DD", s)
	}
	var err error
	if c.month, err = parseField(parts[0], 1, 12, "month"); err != nil {
		return err
	}
	c.dom, err = parseField(parts[1], 1, 31, "day")
	return err
}

func (c *calendar) parseTime(s string) error {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("time %q: expected HH:MM", s)
	}
	if len(parts) == 3 {
		if sec, err := strconv.Atoi(parts[2]); err != nil || sec != 0 {
			return fmt.Errorf("seconds (%q) cannot be expressed in cron; use :00 or leave them out", parts[2])
		}
	}
	var err error
	if c.hour, err = parseField(parts[0], 0, 23, "hour"); err != nil {
		return err
	}
	c.minute, err = parseField(parts[1], 0, 59, "minute")
	return err
}

// parseField parses one field: *, N, N,M, N..M, N/STEP, */STEP. nil means
// every value.
func parseField(s string, lo, hi int, what string) ([]int, error) {
	if s == "*" {
		return nil, nil
	}
	set := map[int]bool{}
	num := func(t string) (int, error) {
		n, err := strconv.Atoi(t)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%s %q: expected a number from %d to %d", what, t, lo, hi)
		}
		return n, nil
	}
	for _, part := range strings.Split(s, ",") {
		base, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			var err error
			if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
				return nil, fmt.Errorf("%s %q: bad repetition", what, part)
			}
		}
		var a, b int
		switch {
		case base == "*":
			a, b = lo, hi
		case strings.Contains(base, ".."):
			x, y, _ := strings.Cut(base, "..")
			var err error
			if a, err = num(x); err != nil {
				return nil, err
			}
			if b, err = num(y); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%s %q: range goes backwards", what, part)
			}
		default:
			var err error
			if a, err = num(base); err != nil {
				return nil, err
			}
			b = a
			if hasStep {
				b = hi
			}
		}
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	if len(set) == hi-lo+1 {
		return nil, nil
	}
	return setList(set, hi+1), nil
}

func setList(set map[int]bool, n int) []int {
	if len(set) == n {
		return nil
	}
	var out []int
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

// cron renders c as the five fields of a crontab line.
func (c calendar) cron() string {
	f := func(v []int) string {
		if v == nil {
			return "*"
		}
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.Itoa(x)
		}
		return strings.Join(parts, ",")
	}
	return strings.Join([]string{f(c.minute), f(c.hour), f(c.dom), f(c.month), f(c.dow)}, " ")
}

func in(v []int, x int) bool {
	if v == nil {
		return true
	}
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// next returns the first minute strictly after from that c matches, in
// from's location; the zero time when there is none within 5 years (a date
// such as 02-30 that never comes).
func (c calendar) next(from time.Time) time.Time {
	t := from.Truncate(time.Minute).Add(time.Minute)
	end := from.AddDate(5, 0, 0)
	for t.Before(end) {
		if !in(c.month, int(t.Month())) || !in(c.dom, t.Day()) || !in(c.dow, int(t.Weekday())) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
			continue
		}
		if !in(c.hour, t.Hour()) {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
			continue
		}
		if !in(c.minute, t.Minute()) {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

// prev returns the last minute at or before at that c matches, in at's
// location; the zero time when there is none within 5 years.
func (c calendar) prev(at time.Time) time.Time {
	t := at.Truncate(time.Minute)
	end := at.AddDate(-5, 0, 0)
	for t.After(end) {
		if !in(c.month, int(t.Month())) || !in(c.dom, t.Day()) || !in(c.dow, int(t.Weekday())) {
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location()).Add(-time.Minute)
			continue
		}
		if !in(c.hour, t.Hour()) {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, t.Location()).Add(-time.Minute)
			continue
		}
		if !in(c.minute, t.Minute()) {
			t = t.Add(-time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

// everyCalendar returns the calendar for "every d" when d divides an hour
// (whole minutes), a day (whole hours) or is a day or a week: then systemd
// runs it on the clock (and catches up a missed run) and cron can express
// it. ok is false otherwise.
func everyCalendar(d time.Duration) (c calendar, onCalendar string, ok bool) {
	min := int(d / time.Minute)
	switch {
	case d%time.Minute != 0:
		return c, "", false
	case min < 60 && 60%min == 0:
		c.minute = stepList(0, 59, min)
		return c, fmt.Sprintf("*-*-* *:00/%d:00", min), true
	case d%time.Hour == 0 && d < 24*time.Hour && 24%int(d/time.Hour) == 0:
		h := int(d / time.Hour)
		c.minute, c.hour = []int{0}, stepList(0, 23, h)
		return c, fmt.Sprintf("*-*-* 00/%d:00:00", h), true
	case d == 24*time.Hour:
		c.minute, c.hour = []int{0}, []int{0}
		return c, "*-*-* 00:00:00", true
	case d == 7*24*time.Hour:
		c.minute, c.hour, c.dow = []int{0}, []int{0}, []int{1}
		return c, "Mon *-*-* 00:00:00", true
	}
	return c, "", false
}

func stepList(lo, hi, step int) []int {
	if step == 1 {
		return nil
	}
	var out []int
	for v := lo; v <= hi; v += step {
		out = append(out, v)
	}
	return out
}

// cronIntervals are the --every values cron can express, for hints.
var cronIntervals = []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
	6 * time.Minute, 10 * time.Minute, 12 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 7 * 24 * time.Hour}

// nearestIntervals returns the expressible intervals just below and above d.
func nearestIntervals(d time.Duration) []time.Duration {
	var below, above time.Duration
	for _, v := range cronIntervals {
		if v < d {
			below = v
		} else if v > d && above == 0 {
			above = v
		}
	}
	var out []time.Duration
	if below > 0 {
		out = append(out, below)
	}
	if above > 0 {
		out = append(out, above)
	}
	return out
}

// FormatDuration writes d the way --every takes it, without zero units:
// 90m → "1h30m", 1h → "1h", 168h → "168h".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
