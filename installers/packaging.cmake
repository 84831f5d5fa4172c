# Packages (CPack): a DEB with the desktop entry, icon and AppStream metadata, and a TGZ of the
# same install tree. `cpack --config build/release/CPackConfig.cmake -G "DEB;TGZ"` after a build;
# tests/installers checks both (see scripts/check-packages.sh).
set(FLUORO_APP_ID io.fluoroscope.Fluoroscope)
if(FLUORO_GUI)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/linux/${FLUORO_APP_ID}.desktop
    DESTINATION share/applications)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/linux/${FLUORO_APP_ID}.metainfo.xml
    DESTINATION share/metainfo)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/linux/${FLUORO_APP_ID}.svg
    DESTINATION share/icons/hicolor/scalable/apps)
endif()

set(CPACK_PACKAGE_NAME fluoroscope)
set(CPACK_PACKAGE_VENDOR "Fluoroscope developers")
set(CPACK_PACKAGE_CONTACT "Fluoroscope developers <dev@fluoroscope.local>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Run language models locally and watch their inference live")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://fluoroscope.local")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Runtime libraries (Qt, SQLite, PCRE2, libstdc++) come from dpkg-shlibdeps on the binaries.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Fluoroscope is a desktop workbench for running large language models (GGUF) locally\n\
and watching their inference live: attention heatmaps, KV-cache occupancy, speculative\n\
decoding steps, prompt-cache hits and a per-step profile. Includes the `fluoro` CLI.")
set(CPACK_PACKAGE_FILE_NAME "fluoroscope-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")  # the TGZ; the DEB keeps DEB-DEFAULT
include(CPack)
