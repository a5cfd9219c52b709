"""Developer tools: screenshots, the console probe and the sample store; not shipped."""
