"""The entry script of index.html (``<script type="py" src="./py/ai_search_web/main.py">``)."""

from ai_search_web.page import Page

Page().start()
