"""What more than one door builds its answers from: the file results' fields (``file_fields``), the
browser's links (``browser_links``) and the gateway's address as a caller reaches it (``addresses``)."""
