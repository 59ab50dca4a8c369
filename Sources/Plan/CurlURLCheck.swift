import CCurl

/// What libcurl makes of a client's URL, asked before packd stores or fetches it: its URL parser
/// and, for a host that is not ASCII, its IDN conversion (`packd_curl_url_check`) — so a URL a
/// transfer would refuse half way through a download (`htTpS://^🌥?b`, a host no IDN conversion
/// takes) is a 422 pointing at the field instead.
public enum CurlURLCheck {
    /// Why libcurl refuses `url`, in its words; nil when it takes it. A tile template is checked
    /// with each `{placeholder}` filled in (`{s}` in a host name, `{bbox-epsg-3857}` in a query).
    public static func refusal(_ url: String, template: Bool = false) -> String? {
        let concrete = template ? filled(url) : url
        let code = packd_curl_url_check(concrete)
        guard code != CURLUE_OK else { return nil }
        return "libcurl cannot use this URL (\(String(cString: curl_url_strerror(code)).lowercased()))"
    }

    private static func filled(_ template: String) -> String {
        var result = ""
        var inPlaceholder = false
        for scalar in template.unicodeScalars {
            if scalar == "{" && !inPlaceholder {
                inPlaceholder = true
                result += "0"
            } else if scalar == "}" && inPlaceholder {
                inPlaceholder = false
            } else if !inPlaceholder {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
