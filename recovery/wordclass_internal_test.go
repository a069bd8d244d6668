package recovery

import "testing"

// How providers word each class, beyond the corpus (each paraphrased from a
// provider's documented or reported message), and sentences that must not
// be read as one: a rate limit that mentions tokens or quota, a parameter
// that is too large, a permission refused.
func TestWordClass_Sentences(t *testing.T) {
	tests := []struct {
		text string
		want string // class name, or "" for none
	}{
		// overflow
		{"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", "overflow"},
		{"Requested token count exceeds the model's maximum context length of 131072 tokens", "overflow"},
		{"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "overflow"},
		{"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length", "overflow"},
		{"prompt too long; exceeded max context length by 4 tokens", "overflow"},
		{"Your input exceeds the context window of this model.", "overflow"},
		{"too many tokens: total number of tokens in the prompt cannot exceed 4081", "overflow"},
		{"input length and `max_tokens` exceed context limit: 179413 + 32768 > 200000", "overflow"},
		{"'max_tokens' is too large: 4096. This model's maximum context length is 8192 tokens and your request has 6000 input tokens", "overflow"},
		{"This model's maximum prompt length is 131072 but the request contains 140000 tokens.", "overflow"},
		{"the request exceeds the available context size, try increasing it", "overflow"},
		{"Input is too long for requested model.", "overflow"},
		{"Reached context length of 4096 tokens with model that does not currently support mid-generation context overflow", "overflow"},
		{"Prompt 超长", "overflow"},
		{"输入长度超过最大长度", "overflow"},
		{"max_tokens is too large: 100000. This model supports at most 4096 completion tokens", ""},
		{"max_tokens must be less than or equal to 16384, the maximum value for max_tokens is less than the context_window for this model", ""},
		{"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 132819. The input or output tokens must be reduced", ""},
		{"Rate limit exceeded: this request asks for more tokens per minute than your limit allows. Reduce max_tokens.", ""},
		{"Request exceeds the maximum allowed number of bytes.", ""},
		{"Requested tokens (9000) exceed context window of 8192", "overflow"},
		{"ThrottlingException: Too many tokens, please wait before trying again.", ""},
		{"max_tokens exceeds the model's token limit of 4096", ""},
		{"Request too large for model `llama3-70b` in organization `org_1` on tokens per minute (TPM): Limit 6000, Requested 9000, please reduce your message size", ""},
		{"Invalid 'messages[2].content': string too long. Expected a string with maximum length 10485760", ""},
		// quota
		{"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", "quota"},
		{"The selected model requires paid balance. Your paid balance is insufficient. Please top up and try again.", "quota"},
		{"Sorry, your account balance is insufficient", "quota"},
		{"The request failed because your account has an overdue balance.", "quota"},
		{"AccountOverdueError", "quota"},
		{"This API method requires billing to be enabled.", "quota"},
		{"Your account is suspended due to unpaid invoices", "quota"},
		{"Budget has been exceeded! Current cost: 10.2, Max budget: 10.0", "quota"},
		{"您的账户已欠费，请充值后重试", "quota"},
		{"litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current quota, please check your plan and billing details.", "quota"},
		{"litellm.RateLimitError: VertexAIException - Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute", ""},
		{"ServiceQuotaExceededException: You have exceeded the service quota for this account", "quota"},
		{"Tokens per day limit exceeded - too many tokens processed.", ""},
		{"Resource has been exhausted (e.g. check quota).", ""},
		{"Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project", ""},
		{"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day", ""},
		{"Number of request tokens has exceeded your per-minute rate limit", ""},
		{"You have no access to billing settings", ""},
		// moderation
		{"Your request was rejected as a result of our safety system.", "moderation"},
		{"Invalid prompt: your prompt was flagged as potentially violating our usage policy.", "moderation"},
		{"Candidate was blocked due to SAFETY", "moderation"},
		{"PROHIBITED_CONTENT", "moderation"},
		{"The response was filtered due to the prompt triggering Microsoft's content management policy.", "moderation"},
		{"Content Exists Risk", "moderation"},
		{"AiError: Input flagged by Llama Guard", "moderation"},
		{"Violated guardrail policy", "moderation"},
		{"抱歉，您的输入涉及敏感信息", "moderation"},
		{"内容安全审核不通过", "moderation"},
		{"openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for \"harassment\". No credits were charged.", "moderation"},
		{"You have no credits left", "quota"},
		{"The model name is case-sensitive", ""},
		{"This request violates the organization's access policy", ""},
		{"The content field is required", ""},
		{"Invalid value for 'moderation': expected a boolean", ""},
		{"区分大小写敏感", ""},
	}
	for _, tt := range tests {
		n := normalise(tt.text)
		got := ""
		for _, c := range classes {
			if c.reads(n, speaksOfRate(n)) {
				got = c.name
				break
			}
		}
		if got != tt.want {
			t.Errorf("%q (%q): class %q, want %q", tt.text, n, got, tt.want)
		}
	}
}

// normalise splits what providers join and joins nothing it should not.
func TestWordClass_Normalise(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ContextWindowExceededError", " context window exceeded error "},
		{"context_window_exceeded", " context window exceeded "},
		{"HTTPError: Too-Long", " http error | too long "},
		{"model's limit (8192 tokens).", " models limit | 8192 tokens | "},
		{"Is4096Tokens", " is 4096 tokens "},
		{"RESOURCE_EXHAUSTED", " resource exhausted "},
		{"余额不足，请充值", " 余额不足 | 请充值 "},
		{"a\x00b\tc\nd", " a b c | d "},
	}
	for _, tt := range tests {
		if got := normalise(tt.in); got != tt.want {
			t.Errorf("normalise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
