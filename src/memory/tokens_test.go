package memory

import (
	"reflect"
	"testing"
)

// The expected stems are those of the Snowball project's English stemmer
// (the reference's sample vocabulary and the special cases of its
// description: exceptions, R1 prefixes, step 1a's "ies" and "s" rules).
var stemCases = []struct{ word, stem string }{
	{"consign", "consign"},
	{"consigned", "consign"},
	{"consigning", "consign"},
	{"consignment", "consign"},
	{"consist", "consist"},
	{"consisted", "consist"},
	{"consistency", "consist"},
	{"consistent", "consist"},
	{"consistently", "consist"},
	{"consisting", "consist"},
	{"consists", "consist"},
	{"consolation", "consol"},
	{"consolations", "consol"},
	{"consolatory", "consolatori"},
	{"console", "consol"},
	{"consoled", "consol"},
	{"consoles", "consol"},
	{"consolidate", "consolid"},
	{"consolidated", "consolid"},
	{"consolidating", "consolid"},
	{"consoling", "consol"},
	{"consolingly", "consol"},
	{"consols", "consol"},
	{"consonant", "conson"},
	{"consort", "consort"},
	{"consorted", "consort"},
	{"consorting", "consort"},
	{"conspicuous", "conspicu"},
	{"conspicuously", "conspicu"},
	{"conspiracy", "conspiraci"},
	{"conspirator", "conspir"},
	{"conspirators", "conspir"},
	{"conspire", "conspir"},
	{"conspired", "conspir"},
	{"conspiring", "conspir"},
	{"constable", "constabl"},
	{"constables", "constabl"},
	{"constance", "constanc"},
	{"constancy", "constanc"},
	{"constant", "constant"},
	{"knack", "knack"},
	{"knackeries", "knackeri"},
	{"knacks", "knack"},
	{"knag", "knag"},
	{"knave", "knave"},
	{"knaves", "knave"},
	{"knavish", "knavish"},
	{"kneaded", "knead"},
	{"kneading", "knead"},
	{"knee", "knee"},
	{"kneel", "kneel"},
	{"kneeled", "kneel"},
	{"kneeling", "kneel"},
	{"kneels", "kneel"},
	{"knees", "knee"},
	{"knell", "knell"},
	{"knelt", "knelt"},
	{"knew", "knew"},
	{"knick", "knick"},
	{"knif", "knif"},
	{"knife", "knife"},
	{"knight", "knight"},
	{"knightly", "knight"},
	{"knights", "knight"},
	{"knit", "knit"},
	{"knits", "knit"},
	{"knitted", "knit"},
	{"knitting", "knit"},
	{"knives", "knive"},
	{"knob", "knob"},
	{"knobs", "knob"},
	{"knock", "knock"},
	{"knocked", "knock"},
	{"knocker", "knocker"},
	{"knockers", "knocker"},
	{"knocking", "knock"},
	{"knocks", "knock"},
	{"knopp", "knopp"},
	{"knot", "knot"},
	{"knots", "knot"},
	{"generous", "generous"},
	{"generously", "generous"},
	{"communication", "communic"},
	{"communities", "communiti"},
	{"arsenal", "arsenal"},
	{"skies", "sky"},
	{"sky", "sky"},
	{"dying", "die"},
	{"lying", "lie"},
	{"tying", "tie"},
	{"idly", "idl"},
	{"gently", "gentl"},
	{"ugly", "ugli"},
	{"early", "earli"},
	{"only", "onli"},
	{"singly", "singl"},
	{"news", "news"},
	{"atlas", "atlas"},
	{"inning", "inning"},
	{"innings", "inning"},
	{"outing", "outing"},
	{"canning", "canning"},
	{"herring", "herring"},
	{"earring", "earring"},
	{"proceed", "proceed"},
	{"proceeds", "proceed"},
	{"exceed", "exceed"},
	{"succeeded", "succeed"},
	{"cries", "cri"},
	{"ties", "tie"},
	{"gas", "gas"},
	{"gaps", "gap"},
	{"kiwis", "kiwi"},
	{"hopping", "hop"},
	{"hoped", "hope"},
	{"hopeful", "hope"},
	{"happily", "happili"},
	{"running", "run"},
	{"caresses", "caress"},
	{"ponies", "poni"},
	{"caress", "caress"},
	{"cats", "cat"},
	{"feed", "feed"},
	{"agreed", "agre"},
	{"disabled", "disabl"},
	{"matting", "mat"},
	{"mating", "mate"},
	{"meeting", "meet"},
	{"milling", "mill"},
	{"messing", "mess"},
	{"meetings", "meet"},
	{"happy", "happi"},
	{"sky", "sky"},
	{"relational", "relat"},
	{"conditional", "condit"},
	{"rational", "ration"},
	{"valenci", "valenc"},
	{"hesitanci", "hesit"},
	{"digitizer", "digit"},
	{"conformabli", "conform"},
	{"radicalli", "radic"},
	{"differentli", "differ"},
	{"vileli", "vile"},
	{"analogousli", "analog"},
	{"vietnamization", "vietnam"},
	{"predication", "predic"},
	{"operator", "oper"},
	{"feudalism", "feudal"},
	{"decisiveness", "decis"},
	{"hopefulness", "hope"},
	{"callousness", "callous"},
	{"formaliti", "formal"},
	{"sensitiviti", "sensit"},
	{"sensibiliti", "sensibl"},
	{"triplicate", "triplic"},
	{"formative", "format"},
	{"formalize", "formal"},
	{"electriciti", "electr"},
	{"electrical", "electr"},
	{"hopeful", "hope"},
	{"goodness", "good"},
	{"revival", "reviv"},
	{"allowance", "allow"},
	{"inference", "infer"},
	{"airliner", "airlin"},
	{"gyroscopic", "gyroscop"},
	{"adjustable", "adjust"},
	{"defensible", "defens"},
	{"irritant", "irrit"},
	{"replacement", "replac"},
	{"adjustment", "adjust"},
	{"dependent", "depend"},
	{"adoption", "adopt"},
	{"homologou", "homologou"},
	{"communism", "communism"},
	{"activate", "activ"},
	{"angulariti", "angular"},
	{"homologous", "homolog"},
	{"effective", "effect"},
	{"bowdlerize", "bowdler"},
	{"probate", "probat"},
	{"rate", "rate"},
	{"cease", "ceas"},
	{"controll", "control"},
	{"roll", "roll"},
	{"researching", "research"},
	{"researched", "research"},
	{"researches", "research"},
	{"caroline's", "carolin"},
	{"o'neil", "o'neil"},
	{"painting", "paint"},
	{"paintings", "paint"},
	{"paint", "paint"},
	{"adopted", "adopt"},
	{"adoption", "adopt"},
	{"adopting", "adopt"},
	{"transgender", "transgend"},
	{"lgbtq", "lgbtq"},
	{"support", "support"},
	{"supported", "support"},
	{"supportive", "support"},
	{"camping", "camp"},
	{"camped", "camp"},
	{"hiking", "hike"},
}

func TestStem(t *testing.T) {
	for _, c := range stemCases {
		if got := Stem(c.word); got != c.stem {
			t.Errorf("Stem(%q) = %q, want %q", c.word, got, c.stem)
		}
	}
	// Words it leaves as they are: short, or not a-z.
	for _, w := range []string{"", "a", "is", "café", "x86", "2023", "naïve"} {
		if got := Stem(w); got != w {
			t.Errorf("Stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

func TestTerms(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"The user prefers Helix over Vim.", []string{"user", "prefer", "helix", "vim"}},
		{"Caroline's LGBTQ+ support-group, I'm researching adoption!", []string{"carolin", "lgbtq", "support", "group", "research", "adopt"}},
		{"She DIDN'T go; she didn’t.", []string{"go"}},
		{"Meeting on 8 May, 2023 at 1:56 pm", []string{"meet", "8", "may", "2023", "1", "56", "pm"}},
		{"STRASSE Straße ſki", []string{"strass", "straße", "ski"}},
		{"Ünïcode ÉCOLE", []string{"ünïcode", "école"}},
		{"'quoted' words''", []string{"quot", "word"}},
		{"", nil},
	}
	for _, c := range cases {
		if got := Terms(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	long := make([]byte, 100)
	for i := range long {
		long[i] = 'q'
	}
	if got := Terms(string(long)); len(got) != 1 || len(got[0]) != maxTokenBytes {
		t.Errorf("a 100-letter word gives %q, want one term of %d bytes", got, maxTokenBytes)
	}
}

func TestStopWords(t *testing.T) {
	for _, w := range []string{"what", "When", "did", "the", "don't", "DIDN’T"} {
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false", w)
		}
	}
	for _, w := range []string{"may", "car", "insurance", "will"} {
		if IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = true", w)
		}
	}
}

// Terms returns the terms recall ranks text by, in order (see tokenizer).
func Terms(text string) []string {
	var out []string
	newTokenizer().words([]byte(text), func(w []byte) {
		if t := termOf(w); t != "" {
			out = append(out, t)
		}
	})
	return out
}
