package memory

import "strings"

// Stem returns the English stem of a lower-case word: the Snowball English
// ("Porter2") stemmer of Martin Porter
// (https://snowballstem.org/algorithms/english/stemmer.html), so that
// "researching", "researched" and "researches" all rank as "research". A
// word with a character outside a-z and the apostrophe is returned as it is.
func Stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; (c < 'a' || c > 'z') && c != '\'' {
			return w
		}
	}
	w = strings.TrimLeft(w, "'")
	if s, ok := stemExceptions[w]; ok {
		return s
	}
	if len(w) <= 2 {
		return w
	}
	b := []byte(w)
	// A y at the start or after a vowel is a consonant: Y.
	for i := range b {
		if b[i] == 'y' && (i == 0 || isVowel(b[i-1])) {
			b[i] = 'Y'
		}
	}
	st := &stemmer{b: b}
	st.regions()
	st.step0()
	st.step1a()
	if _, ok := stemInvariant1a[string(st.b)]; ok {
		return string(st.b)
	}
	st.step1b()
	st.step1c()
	st.step2()
	st.step3()
	st.step4()
	st.step5()
	for i := range st.b {
		if st.b[i] == 'Y' {
			st.b[i] = 'y'
		}
	}
	return string(st.b)
}

// stemExceptions are the words the algorithm lists with their stems.
var stemExceptions = map[string]string{
	"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
	"sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes",
}

// stemInvariant1a are left as they are after step 1a.
var stemInvariant1a = map[string]struct{}{
	"inning": {}, "outing": {}, "canning": {}, "herring": {}, "earring": {},
	"proceed": {}, "exceed": {}, "succeed": {},
}

type stemmer struct {
	b      []byte
	r1, r2 int
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

// regions sets R1 (after the first non-vowel that follows a vowel) and R2
// (the same, within R1).
func (s *stemmer) regions() {
	b := s.b
	s.r1, s.r2 = len(b), len(b)
	for _, p := range []string{"gener", "commun", "arsen"} {
		if strings.HasPrefix(string(b), p) {
			s.r1 = len(p)
			break
		}
	}
	if s.r1 == len(b) {
		s.r1 = regionAfter(b, 0)
	}
	s.r2 = regionAfter(b, s.r1)
}

func regionAfter(b []byte, from int) int {
	for i := from + 1; i < len(b); i++ {
		if !isVowel(b[i]) && isVowel(b[i-1]) {
			return i + 1
		}
	}
	return len(b)
}

func (s *stemmer) has(suf string) bool { return strings.HasSuffix(string(s.b), suf) }

// longest returns the longest of sufs that ends the word, or "".
func (s *stemmer) longest(sufs ...string) string {
	best := ""
	for _, x := range sufs {
		if len(x) > len(best) && s.has(x) {
			best = x
		}
	}
	return best
}

func (s *stemmer) inR1(suf string) bool { return len(s.b)-len(suf) >= s.r1 }
func (s *stemmer) inR2(suf string) bool { return len(s.b)-len(suf) >= s.r2 }

func (s *stemmer) replace(suf, with string) {
	s.b = append(s.b[:len(s.b)-len(suf)], with...)
}

func (s *stemmer) vowelIn(b []byte) bool {
	for _, c := range b {
		if isVowel(c) {
			return true
		}
	}
	return false
}

// shortSyllableAt reports whether the word up to end ends in a short
// syllable: a vowel followed by a non-vowel other than w, x and Y and
// preceded by a non-vowel, or a vowel at the start followed by a non-vowel.
func (s *stemmer) shortSyllableAt(end int) bool {
	b := s.b[:end]
	n := len(b)
	if n == 2 {
		return isVowel(b[0]) && !isVowel(b[1])
	}
	if n >= 3 {
		c := b[n-1]
		return !isVowel(b[n-3]) && isVowel(b[n-2]) && !isVowel(c) && c != 'w' && c != 'x' && c != 'Y'
	}
	return false
}

func (s *stemmer) short() bool { return s.r1 >= len(s.b) && s.shortSyllableAt(len(s.b)) }

func (s *stemmer) step0() {
	if x := s.longest("'s'", "'s", "'"); x != "" {
		s.replace(x, "")
	}
}

func (s *stemmer) step1a() {
	switch x := s.longest("sses", "ied", "ies", "us", "ss", "s"); x {
	case "sses":
		s.replace(x, "ss")
	case "ied", "ies":
		if len(s.b) > 4 {
			s.replace(x, "i")
		} else {
			s.replace(x, "ie")
		}
	case "s":
		// Deleted when a vowel comes before the letter just before the s.
		if len(s.b) >= 3 && s.vowelIn(s.b[:len(s.b)-2]) {
			s.replace(x, "")
		}
	}
}

func (s *stemmer) step1b() {
	switch x := s.longest("eed", "eedly", "ed", "edly", "ing", "ingly"); x {
	case "":
	case "eed", "eedly":
		if s.inR1(x) {
			s.replace(x, "ee")
		}
	default:
		if !s.vowelIn(s.b[:len(s.b)-len(x)]) {
			return
		}
		s.replace(x, "")
		switch {
		case s.has("at"), s.has("bl"), s.has("iz"):
			s.b = append(s.b, 'e')
		case s.endsDouble():
			s.b = s.b[:len(s.b)-1]
		case s.short():
			s.b = append(s.b, 'e')
		}
	}
}

func (s *stemmer) endsDouble() bool {
	for _, d := range []string{"bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"} {
		if s.has(d) {
			return true
		}
	}
	return false
}

func (s *stemmer) step1c() {
	n := len(s.b)
	if n > 2 && (s.b[n-1] == 'y' || s.b[n-1] == 'Y') && !isVowel(s.b[n-2]) {
		s.b[n-1] = 'i'
	}
}

var step2Rules = []struct{ suf, with string }{
	{"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"abli", "able"}, {"entli", "ent"},
	{"izer", "ize"}, {"ization", "ize"}, {"ational", "ate"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"aliti", "al"}, {"alli", "al"}, {"fulness", "ful"}, {"ousli", "ous"},
	{"ousness", "ous"}, {"iveness", "ive"}, {"iviti", "ive"}, {"biliti", "ble"}, {"bli", "ble"},
	{"ogi", "og"}, {"fulli", "ful"}, {"lessli", "less"}, {"li", ""},
}

var step3Rules = []struct{ suf, with string }{
	{"tional", "tion"}, {"ational", "ate"}, {"alize", "al"}, {"icate", "ic"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""}, {"ative", ""},
}

func longestRule(s *stemmer, rules []struct{ suf, with string }) (string, string) {
	best, with := "", ""
	for _, r := range rules {
		if len(r.suf) > len(best) && s.has(r.suf) {
			best, with = r.suf, r.with
		}
	}
	return best, with
}

func (s *stemmer) step2() {
	x, with := longestRule(s, step2Rules)
	if x == "" || !s.inR1(x) {
		return
	}
	n := len(s.b) - len(x)
	switch x {
	case "ogi":
		if n == 0 || s.b[n-1] != 'l' {
			return
		}
	case "li":
		if n == 0 || !strings.ContainsRune("cdeghkmnrt", rune(s.b[n-1])) {
			return
		}
	}
	s.replace(x, with)
}

func (s *stemmer) step3() {
	x, with := longestRule(s, step3Rules)
	if x == "" || !s.inR1(x) || x == "ative" && !s.inR2(x) {
		return
	}
	s.replace(x, with)
}

func (s *stemmer) step4() {
	x := s.longest("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
		"ism", "ate", "iti", "ous", "ive", "ize", "ion")
	if x == "" || !s.inR2(x) {
		return
	}
	if x == "ion" {
		n := len(s.b) - 3
		if n == 0 || s.b[n-1] != 's' && s.b[n-1] != 't' {
			return
		}
	}
	s.replace(x, "")
}

func (s *stemmer) step5() {
	n := len(s.b)
	switch {
	case n > 0 && s.b[n-1] == 'e':
		if s.inR2("e") || s.inR1("e") && !s.shortSyllableAt(n-1) {
			s.b = s.b[:n-1]
		}
	case n > 1 && s.b[n-1] == 'l' && s.b[n-2] == 'l':
		if s.inR2("l") {
			s.b = s.b[:n-1]
		}
	}
}
