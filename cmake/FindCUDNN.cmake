# FindCUDNN.cmake -- locate cuDNN 9 (header cudnn.h, library libcudnn) and define CUDNN::cudnn.
#
# Searched, in order: CUDNN_ROOT (variable or environment), the CUDA toolkit's folders, the system
# folders, and the pip wheel `nvidia-cudnn-cu*` of the python3 on PATH (PyTorch images ship cuDNN only
# that way; the wheel has libcudnn.so.9 but no unversioned libcudnn.so, so both names are tried).
#
# Result variables: CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_LIBRARY_DIR, CUDNN_VERSION.

set(_cudnn_hints "")
if(CUDNN_ROOT)
  list(APPEND _cudnn_hints ${CUDNN_ROOT})
endif()
if(DEFINED ENV{CUDNN_ROOT})
  list(APPEND _cudnn_hints $ENV{CUDNN_ROOT})
endif()
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _cudnn_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
if(CUDAToolkit_INCLUDE_DIRS)
  foreach(_d ${CUDAToolkit_INCLUDE_DIRS})
    get_filename_component(_p ${_d} DIRECTORY)
    list(APPEND _cudnn_hints ${_p})
  endforeach()
endif()

# The pip wheel: nvidia/cudnn/{include,lib} next to the python3 that has it.
find_program(_cudnn_python NAMES python3)
if(_cudnn_python)
  execute_process(
    COMMAND ${_cudnn_python} -c "import nvidia.cudnn, os; p = nvidia.cudnn.__path__; print(list(p)[0])"
    OUTPUT_VARIABLE _cudnn_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _cudnn_rc)
  if(_cudnn_rc EQUAL 0 AND _cudnn_wheel)
    list(APPEND _cudnn_hints ${_cudnn_wheel})
  endif()
endif()

find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints}
  PATH_SUFFIXES include include/x86_64-linux-gnu targets/x86_64-linux/include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)

if(CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _v REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _maj "${_v}")
  string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _min "${_v}")
  string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _pat "${_v}")
  set(CUDNN_VERSION "${_maj}.${_min}.${_pat}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  get_filename_component(CUDNN_LIBRARY_DIR ${CUDNN_LIBRARY} DIRECTORY)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
