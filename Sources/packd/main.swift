// Placeholder entry point until the Server module lands; replaced by the `packd serve` CLI.
import Loop
print("packd")
