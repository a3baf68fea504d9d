package chart

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// selector is a vector selector of a PromQL expression: its metric name and label matchers.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

func (s selector) String() string {
	var ms []string
	for _, m := range s.matchers {
		ms = append(ms, fmt.Sprintf("%s%s%q", m.label, m.op, m.value))
	}
	return s.name + "{" + strings.Join(ms, ",") + "}"
}

// equal returns the value of the selector's equality matcher on label, if it has one.
func (s selector) equal(label string) (string, bool) {
	for _, m := range s.matchers {
		if m.label == label && m.op == "=" {
			return m.value, true
		}
	}
	return "", false
}

// promqlKeywords are the identifiers of PromQL that are not metric names: aggregations
// (which may take their grouping before their parentheses), set and grouping operators, and
// number literals.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "count": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "group": true,
	"limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// grouping keywords take a parenthesized list of labels.
var groupingKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// vectorSelectors returns the vector selectors of a PromQL expression. It is a small lexer
// rather than Prometheus' parser (not a dependency of this module), enough for the
// expressions the chart ships, and strict: what it does not understand fails.
func vectorSelectors(expr string) ([]selector, error) {
	type token struct{ kind, text string }
	var toks []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && (isIdentStart(expr[j]) || (expr[j] >= '0' && expr[j] <= '9')) {
				j++
			}
			toks = append(toks, token{"ident", expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i + 1
			for j < len(expr) && (isIdentStart(expr[j]) || (expr[j] >= '0' && expr[j] <= '9') || expr[j] == '.') {
				j++
			}
			toks = append(toks, token{"number", expr[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{"string", expr[i:j]})
			i = j
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			j := i + 1
			for j < len(expr) && expr[j] != end {
				if expr[j] == '"' || expr[j] == '\'' || expr[j] == '`' {
					k, err := skipString(expr, j)
					if err != nil {
						return nil, err
					}
					j = k
					continue
				}
				j++
			}
			if j == len(expr) {
				return nil, fmt.Errorf("unclosed %c in %q", c, expr)
			}
			toks = append(toks, token{string(c), expr[i+1 : j]})
			i = j + 1
		case strings.ContainsRune("()+-*/%^=!<>,", rune(c)):
			toks = append(toks, token{"op", string(c)})
			i++
		default:
			return nil, fmt.Errorf("unexpected %q at %d in %q", c, i, expr)
		}
	}
	var out []selector
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := token{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t.kind == "ident" && groupingKeywords[strings.ToLower(t.text)]:
			if next.text != "(" {
				continue
			}
			for i++; i < len(toks) && toks[i].text != ")"; i++ {
			}
		case t.kind == "ident" && promqlKeywords[strings.ToLower(t.text)]:
		case t.kind == "ident" && next.text == "(": // a function
		case t.kind == "ident":
			s := selector{name: t.text}
			if next.kind == "{" {
				ms, err := matchers(next.text)
				if err != nil {
					return nil, err
				}
				s.matchers = ms
				i++
			}
			out = append(out, s)
		case t.kind == "{":
			ms, err := matchers(t.text)
			if err != nil {
				return nil, err
			}
			s := selector{matchers: ms}
			s.name, _ = s.equal("__name__")
			out = append(out, s)
		}
	}
	return out, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func skipString(expr string, i int) (int, error) {
	q := expr[i]
	for j := i + 1; j < len(expr); j++ {
		switch expr[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unclosed string in %q", expr)
}

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)`)

// matchers parses the inside of a selector's braces.
func matchers(s string) ([]matcher, error) {
	var out []matcher
	for rest := s; strings.TrimSpace(rest) != ""; {
		m := matcherRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("cannot parse the matchers {%s} at %q", s, rest)
		}
		out = append(out, matcher{m[1], m[2], strings.ReplaceAll(m[3], `\"`, `"`)})
		rest = rest[len(m[0]):]
	}
	return out, nil
}

// TestVectorSelectors: the parser finds the selectors of the shapes the chart's expressions
// take, and nothing else.
func TestVectorSelectors(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`absent(lockstep_leader{job="j",namespace="n"})`, []string{`lockstep_leader{job="j",namespace="n"}`}},
		{`max by (namespace, job) (lockstep_leader{job="j"}) < 1`, []string{`lockstep_leader{job="j"}`}},
		{`sum(rate(lockstep_gang_attempts_total{job="j",result="timeout"}[15m])) by (result) > 0`,
			[]string{`lockstep_gang_attempts_total{job="j",result="timeout"}`}},
		{`histogram_quantile(0.99, sum by (namespace, job, le) (rate(x_bucket{a=~"$b",c!="d"}[1h]))) > 0.15`,
			[]string{`x_bucket{a=~"$b",c!="d"}`}},
		{`sum(scheduler_pending_pods) by (queue) / on (job) group_left count(lockstep_leader offset 5m)`,
			[]string{`scheduler_pending_pods{}`, `lockstep_leader{}`}},
		{`{__name__="lockstep_leader", job="a,b"}`, []string{`lockstep_leader{__name__="lockstep_leader",job="a,b"}`}},
		// Gauges by reason, kept by the aggregation (LockstepInvalidGroups,
		// LockstepPodsWaitingForMissingGroup).
		{`sum by (namespace, job, reason) (lockstep_groups_invalid{job="j",namespace="n"}) > 0`,
			[]string{`lockstep_groups_invalid{job="j",namespace="n"}`}},
		{`sum by (namespace, job, reason) (lockstep_pods_waiting_for_group{job="j",namespace="n",reason!="job"}) > 0`,
			[]string{`lockstep_pods_waiting_for_group{job="j",namespace="n",reason!="job"}`}},
	} {
		got, err := vectorSelectors(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		var gs []string
		for _, s := range got {
			gs = append(gs, s.String())
		}
		if strings.Join(gs, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: selectors %v, want %v", c.expr, gs, c.want)
		}
	}
	if _, err := vectorSelectors(`lockstep_leader{job=j}`); err == nil {
		t.Errorf("an unquoted matcher value parsed")
	}
}

// aggregationLabels returns the label lists of an expression's aggregations: those kept
// (by) and those dropped (without).
func aggregationLabels(expr string) (by, without [][]string) {
	for _, m := range aggregationRE.FindAllStringSubmatch(expr, -1) {
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		if m[1] == "by" {
			by = append(by, labels)
		} else {
			without = append(without, labels)
		}
	}
	return by, without
}

var aggregationRE = regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)

// TestAggregationLabels: the label lists of the aggregations the chart's expressions use.
func TestAggregationLabels(t *testing.T) {
	for _, c := range []struct {
		expr        string
		by, without string
	}{
		{`sum by (namespace, job, reason) (lockstep_groups_invalid{job="j"}) > 0`, "namespace job reason", ""},
		{`histogram_quantile(0.99, sum by (namespace, job, le) (rate(x_bucket[5m])))`, "namespace job le", ""},
		{`sum without (instance) (x) / on (job) group_left count by (job) (y)`, "job", "instance"},
		{`absent(lockstep_leader{job="j"})`, "", ""},
	} {
		by, without := aggregationLabels(c.expr)
		join := func(ls [][]string) string {
			var all []string
			for _, l := range ls {
				all = append(all, l...)
			}
			return strings.Join(all, " ")
		}
		if join(by) != c.by || join(without) != c.without {
			t.Errorf("%s: by %v, without %v; want by %q, without %q", c.expr, by, without, c.by, c.without)
		}
	}
}
