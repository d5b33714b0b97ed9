package providers

func newResponses(c common) *chatModel { return newChat(c, "") }
