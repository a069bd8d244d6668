package recovery_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
)

// How providers say they have no such model (%s: the name asked for),
// each with the code they send, if any.
var modelMissingWordings = []struct{ message, code, typ string }{
	{"The model `%s` does not exist or you do not have access to it.", "model_not_found", "invalid_request_error"},
	{"The model `%s` does not exist or you do not have access to it.", "", ""},
	{`model "%s" not found, try pulling it first`, "", "api_error"},
	{"model '%s' not found", "", ""},
	{"Model Not Exist", "invalid_request_error", ""},
	{"Invalid model: %s", "", ""},
	{"%s is not a valid model ID", "", ""},
	{"Invalid model name passed in model=%s. Call `/v1/models` to view available models for your key.", "", ""},
	{"models/%s is not found for API version v1beta, or is not supported for generateContent.", "", "NOT_FOUND"},
	{"Unable to access model %s. Please visit https://api.together.ai/models to view the list of supported models.", "model_not_available", ""},
	{"The API deployment for this resource does not exist.", "DeploymentNotFound", ""},
	{"Unknown model: %s", "unknown_model", ""},
	{"No endpoints found for %s.", "", ""},
	{"The requested model is not supported.", "model_not_supported", ""},
	{"model: %s", "", "not_found_error"},
}

// Answers to a request for an existing model that must not read as a
// missing one, under the statuses a missing model comes with.
var modelPresentWordings = []string{
	"Invalid value for 'temperature': must be between 0 and 2.",
	"This model's maximum context length is 8192 tokens. However, your messages resulted in 9010 tokens.",
	"Tool calling is not supported for this request.",
	"Not Found",
	"Invalid API key provided.",
	"The messages field is required.",
	"model parameter temperature must be a number",
}

// modelName makes a model name of the shapes providers use: a family,
// a size or version with dots and dashes, an org/ prefix, a :tag.
func modelName(r *rand.Rand) string {
	fam := []string{"gpt", "qwen", "llama", "deepseek", "mistral", "claude", "gemini", "o", "kimi", "glm"}[r.IntN(10)]
	name := fam + []string{"-", "", "."}[r.IntN(3)] + fmt.Sprint(r.IntN(10)) + []string{"", ".5", "o", "-mini", "-turbo", "-70b-instruct"}[r.IntN(6)]
	if r.IntN(3) == 0 {
		name = []string{"openai/", "meta-llama/", "Qwen/", "accounts/fireworks/models/"}[r.IntN(4)] + name
	}
	if r.IntN(3) == 0 {
		name += ":" + []string{"8b", "latest", "free", "q4_K_M"}[r.IntN(4)]
	}
	if r.IntN(4) == 0 {
		name = strings.ToUpper(name[:1]) + name[1:]
	}
	return name
}

func errorBody(t *testing.T, message, code, typ string) []byte {
	e := map[string]any{"message": message}
	if code != "" {
		e["code"] = code
	}
	if typ != "" {
		e["type"] = typ
	}
	b, err := json.Marshal(map[string]any{"error": e})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestModelNotFound_Property: every wording of a missing model, with any
// model name, under 400, 404 and 422, reads as one; answers that speak of
// something else, under the same statuses, and a missing-model wording
// under a status that means something else (429, 5xx, 401), do not.
func TestModelNotFound_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 10))
	for i := range testkit.Cases(300, 60) { // every wording 4 times under -race
		w := modelMissingWordings[i%len(modelMissingWordings)]
		model := modelName(r)
		msg := w.message
		if strings.Contains(msg, "%s") {
			msg = fmt.Sprintf(msg, model)
		}
		st := []int{400, 404, 422}[r.IntN(3)]
		f := answer(t, st, errorBody(t, msg, w.code, w.typ), false, nil)
		if !f.ModelNotFound(model) {
			t.Errorf("%d %q (code %q, type %q) asking for %q: not read as a missing model (failure %s)", st, msg, w.code, w.typ, model, f.Code)
		}
		if st := []int{429, 500, 503, 401}[r.IntN(4)]; w.code == "" && answer(t, st, errorBody(t, msg, "", ""), false, nil).ModelNotFound(model) {
			t.Errorf("%d %q: read as a missing model; the status says otherwise", st, msg)
		}
	}
	for i := range testkit.Cases(100, 28) {
		msg := modelPresentWordings[i%len(modelPresentWordings)]
		model := modelName(r)
		st := []int{400, 404, 422}[r.IntN(3)]
		if f := answer(t, st, errorBody(t, msg, "", "invalid_request_error"), false, nil); f.ModelNotFound(model) {
			t.Errorf("%d %q asking for %q: read as a missing model", st, msg, model)
		}
	}
}
