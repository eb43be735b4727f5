"""The entry script of index.html and of the widget page embed.html (PyScript runs it: ``<script type="py" src=...>``)."""

from ai_search_web.embed_bridge import EmbedBridge
from ai_search_web.page import Page

page = Page()
page.start()
EmbedBridge.attach(page)  # the widget page in an allowed host's iframe only; elsewhere nothing
