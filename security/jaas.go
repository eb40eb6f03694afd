package security

import (
	"fmt"
	"strings"
	"unicode"
)

// JAAS is one login module entry of a JAAS configuration, as Kafka's
// sasl.jaas.config holds it: `<class> <flag> key="value" ...;`.
type JAAS struct {
	Module  string
	Flag    string
	Options map[string]string
}

// ParseJAAS reads a sasl.jaas.config value of one login module, with
// Kafka's syntax (JaasConfig): the module's class, its control flag
// (required, requisite, sufficient, optional), options as key=value or
// key="value" (backslash escapes inside quotes), and a closing semicolon.
// Its errors never show a value: options hold passwords.
func ParseJAAS(s string) (JAAS, error) {
	var j JAAS
	toks, err := jaasTokens(s)
	if err != nil {
		return j, err
	}
	if len(toks) < 3 || toks[len(toks)-1] != ";" {
		return j, fmt.Errorf("sasl.jaas.config: want `<LoginModule class> required key=\"value\" ...;`")
	}
	j.Module, j.Flag = toks[0], toks[1]
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return j, fmt.Errorf("sasl.jaas.config: the control flag after %s must be required, requisite, sufficient or optional", j.Module)
	}
	j.Options = map[string]string{}
	opts := toks[2 : len(toks)-1]
	for i := 0; i < len(opts); i += 3 {
		if i+2 >= len(opts) || opts[i+1] != "=" || opts[i] == "=" || opts[i] == ";" {
			return j, fmt.Errorf("sasl.jaas.config: options of %s must be key=\"value\"", j.Module)
		}
		j.Options[opts[i]] = opts[i+2]
	}
	return j, nil
}

// jaasTokens splits s into words, "=", ";" and quoted strings (unquoted).
func jaasTokens(s string) ([]string, error) {
	var toks []string
	r := []rune(s)
	for i := 0; i < len(r); {
		switch c := r[i]; {
		case unicode.IsSpace(c):
			i++
		case c == '=' || c == ';':
			toks = append(toks, string(c))
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(r) && r[j] != c; j++ {
				if r[j] == '\\' && j+1 < len(r) {
					j++
				}
				b.WriteRune(r[j])
			}
			if j >= len(r) {
				return nil, fmt.Errorf("sasl.jaas.config: a quoted value is not closed")
			}
			toks = append(toks, b.String())
			i = j + 1
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && r[j] != '=' && r[j] != ';' && r[j] != '"' {
				j++
			}
			toks = append(toks, string(r[i:j]))
			i = j
		}
	}
	return toks, nil
}
